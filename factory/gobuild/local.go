package gobuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/internal/cputime"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// LocalTarget is a set of main packages built in a local directory, inside
// its own main module: a working tree under test (a cluster-api checkout,
// a provider's repository), built the way `go build` run there builds it,
// with that module's go.mod and go.sum. Dependencies come from the module
// proxy, as for any build.
type LocalTarget struct {
	// Dir is the directory the go command runs in; its main module is the
	// go.mod at or above it. Required.
	Dir string
	// Packages are the main packages: import paths, or paths relative to
	// Dir ("./cmd/manager", "."). Required; binary names must differ.
	Packages []string
	// CGO, Tags, LDFlags, GOARCH and Harness are as in Target.
	CGO     bool
	Tags    []string
	LDFlags []string
	GOARCH  string
	Harness bool
}

// SourceInfo describes what a main package in a local directory is built
// from.
type SourceInfo struct {
	// ImportPath is the package's import path.
	ImportPath string
	// Hash covers, for every package the binary is built from that lives
	// in a local module (the main module, or one it replaces with a
	// directory), its import path and the content of its files (Go, cgo,
	// assembly, syso and embedded files, as `go list` reports them for the
	// target platform and tags), plus the main module's go.mod and go.sum,
	// which pin everything else. A change to any file outside those
	// packages (docs, tests, another binary's code) leaves it unchanged.
	Hash string
	// Packages is how many local packages the hash covers.
	Packages int
}

// listedPackage is the part of `go list -json` output SourceHashes reads.
type listedPackage struct {
	ImportPath string
	Dir        string
	Name       string
	Standard   bool
	Deps       []string
	Module     *struct {
		Path    string
		Dir     string
		GoMod   string
		Main    bool
		Replace *struct {
			Path    string
			Version string
		}
	}
	GoFiles, CgoFiles, CFiles, CXXFiles, HFiles, SFiles, SysoFiles, EmbedFiles []string
	Error                                                                      *struct{ Err string }
	DepsErrors                                                                 []*struct{ Err string }
}

func (p *listedPackage) local() bool {
	m := p.Module
	return m != nil && (m.Main || (m.Replace != nil && m.Replace.Version == ""))
}

// SourceHashes hashes the sources of each main package of t (see
// SourceInfo) with one `go list -deps` in t.Dir, under the build's
// platform, cgo setting and tags.
func (b *Builder) SourceHashes(ctx context.Context, t LocalTarget) (map[string]SourceInfo, error) {
	if t.Dir == "" || len(t.Packages) == 0 {
		return nil, errors.New("hash sources: LocalTarget needs Dir and Packages")
	}
	fields := "ImportPath,Dir,Name,Standard,Deps,Module,GoFiles,CgoFiles,CFiles,CXXFiles,HFiles,SFiles,SysoFiles,EmbedFiles,Error,DepsErrors"
	args := []string{"list", "-e", "-deps", "-json=" + fields}
	if len(t.Tags) > 0 {
		args = append(args, "-tags", strings.Join(t.Tags, ","))
	}
	args = append(args, t.Packages...)
	cmd := exec.CommandContext(ctx, b.goCommand(), args...)
	cmd.Dir = t.Dir
	cmd.Env = t.target().env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cputime.Run(ctx, cmd); err != nil {
		return nil, fmt.Errorf("hash sources in %s: go list: %w: %s", t.Dir, err, strings.TrimSpace(stderr.String()))
	}
	byPath := map[string]*listedPackage{}
	var mains []*listedPackage
	var mainMod *listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		p := &listedPackage{}
		if err := dec.Decode(p); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("hash sources in %s: read go list output: %w", t.Dir, err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("hash sources in %s: package %s: %s", t.Dir, p.ImportPath, p.Error.Err)
		}
		byPath[p.ImportPath] = p
		if p.Module != nil && p.Module.Main && mainMod == nil {
			mainMod = p
		}
		if p.Name == "main" && p.local() {
			mains = append(mains, p)
		}
	}
	if mainMod == nil {
		return nil, fmt.Errorf("hash sources in %s: no package of the main module among %s", t.Dir, strings.Join(t.Packages, ", "))
	}
	modFiles := []string{"go.mod"}
	if _, err := os.Stat(filepath.Join(filepath.Dir(mainMod.Module.GoMod), "go.sum")); err == nil {
		modFiles = append(modFiles, "go.sum") // a module without dependencies has none
	}
	modHash, err := hashFiles(filepath.Dir(mainMod.Module.GoMod), modFiles...)
	if err != nil {
		return nil, fmt.Errorf("hash sources in %s: %w", t.Dir, err)
	}
	out := map[string]SourceInfo{}
	for _, want := range t.Packages {
		// A relative package is reported under its import path: match by
		// directory then.
		var main *listedPackage
		for _, m := range mains {
			if m.ImportPath == want || (strings.HasPrefix(want, ".") && m.Dir == filepath.Join(t.Dir, want)) {
				main = m
			}
		}
		if main == nil {
			return nil, fmt.Errorf("hash sources in %s: %s is not a main package of a local module", t.Dir, want)
		}
		h := sha256.New()
		fmt.Fprintf(h, "gobuild/local/v1\nmodules %s\n", modHash)
		n := 0
		for _, path := range append(slices.Sorted(slices.Values(main.Deps)), main.ImportPath) {
			p := byPath[path]
			if p == nil || p.Standard || !p.local() {
				continue
			}
			files := slices.Concat(p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles)
			slices.Sort(files)
			fh, err := hashFiles(p.Dir, files...)
			if err != nil {
				return nil, fmt.Errorf("hash sources in %s: package %s: %w", t.Dir, path, err)
			}
			fmt.Fprintf(h, "package %s %s\n", path, fh)
			n++
		}
		out[want] = SourceInfo{ImportPath: main.ImportPath, Hash: hex.EncodeToString(h.Sum(nil)), Packages: n}
	}
	return out, nil
}

// hashFiles hashes the names and contents of files in dir.
func hashFiles(dir string, files ...string) (string, error) {
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s %x\n", filepath.ToSlash(f), sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// target is t as a Target for its flags and environment.
func (t LocalTarget) target() Target {
	return Target{CGO: t.CGO, Tags: t.Tags, LDFlags: t.LDFlags, GOARCH: t.GOARCH, Packages: t.Packages, Harness: t.Harness}
}

// BuildLocal compiles t in its directory and returns the binaries. sources
// must be t's SourceHashes: binaries are kept by those hashes (with the
// toolchain and flags), so an unchanged tree is not even relinked.
func (b *Builder) BuildLocal(ctx context.Context, t LocalTarget, sources map[string]SourceInfo) (Result, error) {
	what := fmt.Sprintf("%s (%s)", t.Dir, strings.Join(t.Packages, ", "))
	if b.CacheDir == "" {
		return Result{}, fmt.Errorf("go build %s: Builder.CacheDir is not set", what)
	}
	goVersion, err := b.toolchain(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	tt := t.target()
	h := sha256.New()
	fmt.Fprintf(h, "gobuild/local-output/v2\n%s\n%q\n%q\n%t\n%q\n%q\n%s\n", goVersion, t.Packages, t.Tags, t.CGO, GCFlags, tt.ldflags(), t.GOARCH)
	if t.Harness {
		fmt.Fprintf(h, "harness\n")
	}
	res := Result{Binaries: map[string]string{}}
	names := map[string]string{}
	for _, p := range t.Packages {
		src, ok := sources[p]
		if !ok {
			return Result{}, fmt.Errorf("go build %s: no source hash for %s", what, p)
		}
		fmt.Fprintf(h, "%s %s\n", src.ImportPath, src.Hash)
		name := gomod.ExecName(src.ImportPath)
		if other, dup := names[name]; dup {
			return Result{}, fmt.Errorf("go build %s: packages %s and %s both make a binary named %q", what, other, p, name)
		}
		names[name] = p
	}
	dir := filepath.Join(b.CacheDir, "gobuild", "local")
	outDir := filepath.Join(dir, "out", hex.EncodeToString(h.Sum(nil)))
	for name := range names {
		res.Binaries[name] = filepath.Join(outDir, name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	if complete(outDir, res.Binaries) {
		res.Cached = true
		now := time.Now()
		_ = os.Chtimes(outDir, now, now) // the cache's age for pruning; a stale time only prunes it sooner
		return res, nil
	}
	tmpOut := outDir + ".tmp"
	_ = os.RemoveAll(tmpOut) // what a failed build left; MkdirAll below fails if it is still in the way
	if err := os.MkdirAll(tmpOut, 0o755); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	res.Log = filepath.Join(dir, "logs", time.Now().UTC().Format("20060102T150405")+"-"+filepath.Base(outDir)[:12]+".log")
	if err := os.MkdirAll(filepath.Dir(res.Log), 0o755); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	// Not -mod=mod: the tree's go.mod and go.sum are used as they are, as
	// a developer's own `go build` would.
	args := slices.DeleteFunc(tt.args(tmpOut+string(filepath.Separator)), func(a string) bool { return a == "-mod=mod" })
	// SourceHashes loaded the packages, so the modules are downloaded.
	if err := b.Slots.Hold(ctx, func() error { return b.run(ctx, t.Dir, tt.env(), res.Log, args...) }); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	if err := os.RemoveAll(outDir); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	if err := os.Rename(tmpOut, outDir); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	if !complete(outDir, res.Binaries) {
		return Result{}, fmt.Errorf("go build %s: the go command succeeded but binaries are missing in %s (log %s)", what, outDir, res.Log)
	}
	pruneOutputs(filepath.Join(dir, "out"), OutputTTL)
	return res, nil
}
