// Package gobuild compiles main packages of Go modules with the go
// command, the way their projects' own builds do. A published module is
// built without a checkout: each build runs in a small wrapper module (kept
// in a cache directory) that requires the module at its version and carries
// the replace directives the module's own go.mod would have applied. A
// local working tree (BuildLocal) is built in place, with its own go.mod,
// and content-addressed by SourceHashes.
//
// The Go build cache makes a second build of the same packages cheap, and
// finished binaries are kept by the hash of everything that determines them,
// so rebuilding an image from unchanged inputs does not even relink.
//
// This package only produces binaries on the host. It must not know about
// images or the container engine (see package goimages for that), and it
// never copies or modifies a module's source: the go command compiles it
// from the module cache or the tree where it is.
package gobuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/mod/module"

	"github.com/capd-e2e/capd-e2e/internal/cputime"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// Target is a set of main packages built together, in one go command, with
// the same flags.
type Target struct {
	// Modules are the modules providing Packages, each at its version; the
	// first is the primary one (its godebug settings apply). Required.
	Modules []module.Version
	// Packages are the import paths of the main packages. Their binaries are
	// named as `go build` names them (the last path element, or the one
	// before a /vN suffix) and the names must differ. Required.
	Packages []string
	// LocalVersion gives the version that stands in for a module that one
	// of Modules replaces with a local directory. If nil, the version of
	// the module holding the replace (right for etcd's and Cluster API's
	// sibling modules); KubernetesStagingVersion for k8s.io/kubernetes.
	LocalVersion func(path, version string) string
	// LocalVersionID names LocalVersion in the output hash (functions
	// cannot be hashed); set it whenever LocalVersion is set.
	LocalVersionID string
	// Replace adds replace directives (module path to version); they win
	// over the modules' own. Optional.
	Replace map[string]string
	// CGO enables cgo; if false, CGO_ENABLED=0 and static binaries.
	CGO bool
	// Tags are build tags. Optional.
	Tags []string
	// LDFlags are extra linker flags, typically -X settings from LDFlagsX.
	// The binaries are always stripped (-s -w).
	LDFlags []string
	// GOARCH is the target architecture; if unset, the go command's.
	GOARCH string
	// Harness compiles as the harness's own programs are (HarnessFlags):
	// without -trimpath, so that the go command reuses every package it
	// already compiled for the suite at the same version, rather than
	// compiling it a second time with other flags. The binaries then carry
	// the module cache's paths in their file names, and nothing else
	// differs. Only worth it for a module whose dependencies the suite
	// shares (Cluster API's managers, the cloud controller manager).
	Harness bool
	// Test compiles the test binary of the one package in Packages (`go
	// test -c`), named as the go command names it: "e2e.test" for
	// k8s.io/kubernetes/test/e2e. Kubernetes' conformance suite is such a
	// binary.
	Test bool
}

// Builder runs go builds. The zero value is not usable: set CacheDir.
// A Builder is safe for concurrent use, also by several processes: builds
// in the same wrapper module are serialised with a file lock.
type Builder struct {
	// CacheDir holds wrapper modules, logs and finished binaries under
	// gobuild/. Required; see gomod.CacheDir.
	CacheDir string
	// GoCommand is the go command; if unset, "go" from PATH.
	GoCommand string
	// Output, if set, also receives the go command's output as it runs
	// (it always goes to a log file).
	Output io.Writer
	// TailLines is how many lines of the log a failure's error carries; if
	// zero, 40.
	TailLines int
	// Slots, if set, bounds the go commands that compile at once (see
	// Slots); module downloads run outside it.
	Slots *Slots

	mu        sync.Mutex
	goVersion string
}

// Result is the outcome of a successful Build.
type Result struct {
	// Binaries maps each binary's name to its path. The files belong to
	// the cache: copy or link them, do not modify them.
	Binaries map[string]string
	// Cached is true when the binaries were reused without running the go
	// command.
	Cached bool
	// Log is the go command's log file (empty when Cached).
	Log string
}

// Path returns the path of the binary named name; it panics if there is
// none, which is a programming error of the caller.
func (r Result) Path(name string) string {
	p, ok := r.Binaries[name]
	if !ok {
		panic(fmt.Sprintf("gobuild: no binary %q in result", name))
	}
	return p
}

// Build compiles t and returns its binaries, reusing earlier binaries of an
// identical build. It returns an error carrying the end of the go command's
// log when the build fails.
func (b *Builder) Build(ctx context.Context, t Target) (Result, error) {
	if err := t.validate(); err != nil {
		return Result{}, err
	}
	what := t.String()
	if b.CacheDir == "" {
		return Result{}, fmt.Errorf("go build %s: Builder.CacheDir is not set", what)
	}
	goVersion, err := b.toolchain(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	mods, err := b.goMods(ctx, t.Modules)
	if err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	goMod, err := wrapperGoMod(mods, t.LocalVersion, t.Replace)
	if err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	dir := filepath.Join(b.CacheDir, "gobuild", wrapperDirName(t.Modules[0], goMod))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	defer unlock()

	outDir := filepath.Join(dir, "out", t.outputHash(goVersion, goMod))
	res := Result{Binaries: map[string]string{}}
	for _, p := range t.Packages {
		res.Binaries[t.binaryName(p)] = filepath.Join(outDir, t.binaryName(p))
	}
	if complete(outDir, res.Binaries) {
		res.Cached = true
		now := time.Now()
		_ = os.Chtimes(outDir, now, now) // marks it used, see pruneOutputs
		return res, nil
	}

	// Rewrite go.mod only when it changed, keeping go.sum: the go command
	// then verifies modules against the sums it recorded before.
	if old, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !bytes.Equal(old, goMod) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), goMod, 0o644); err != nil {
			return Result{}, fmt.Errorf("go build %s: %w", what, err)
		}
	}
	if err := os.RemoveAll(outDir); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
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
	// Every module the packages need, downloaded before the compile slot
	// is taken: on a cold machine this is network time, in which another
	// build compiles. go list loads the packages without compiling them.
	if err := b.run(ctx, dir, t.env(), strings.TrimSuffix(res.Log, ".log")+"-download.log", t.listArgs()...); err != nil {
		return Result{}, fmt.Errorf("go build %s: download: %w", what, err)
	}
	args := t.args(tmpOut + string(filepath.Separator))
	if err := b.Slots.Hold(ctx, func() error { return b.run(ctx, dir, t.env(), res.Log, args...) }); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	if err := os.Rename(tmpOut, outDir); err != nil {
		return Result{}, fmt.Errorf("go build %s: %w", what, err)
	}
	if !complete(outDir, res.Binaries) {
		return Result{}, fmt.Errorf("go build %s: the go command succeeded but binaries are missing in %s (log %s)", what, outDir, res.Log)
	}
	pruneOutputs(filepath.Dir(outDir), OutputTTL)
	return res, nil
}

// OutputTTL is how long finished binaries unused by any build are kept.
// Only outputs are pruned; the Go build cache trims itself.
const OutputTTL = 14 * 24 * time.Hour

// pruneOutputs removes output directories under dir (and logs) that no
// build has used for ttl. Errors are ignored: pruning is best effort.
func pruneOutputs(dir string, ttl time.Duration) {
	for _, d := range []string{dir, filepath.Join(filepath.Dir(dir), "logs")} {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > ttl {
				_ = os.RemoveAll(filepath.Join(d, e.Name())) // pruning the cache: tried again next run
			}
		}
	}
}

func (t Target) validate() error {
	if len(t.Modules) == 0 || len(t.Packages) == 0 {
		return errors.New("go build: Target needs Modules and Packages")
	}
	for _, m := range t.Modules {
		if m.Path == "" || m.Version == "" {
			return fmt.Errorf("go build: module %q: path and version are required", m)
		}
	}
	seen := map[string]string{}
	for _, p := range t.Packages {
		n := gomod.ExecName(p)
		if other, dup := seen[n]; dup {
			return fmt.Errorf("go build: packages %s and %s both make a binary named %q: build them separately", other, p, n)
		}
		seen[n] = p
	}
	if t.LocalVersion != nil && t.LocalVersionID == "" {
		return errors.New("go build: Target.LocalVersion needs a LocalVersionID")
	}
	if t.Test && len(t.Packages) != 1 {
		return fmt.Errorf("go build: a test binary is built from one package, not %d", len(t.Packages))
	}
	return nil
}

// binaryName is the name of pkg's binary: its ExecName, plus ".test" for
// a test binary.
func (t Target) binaryName(pkg string) string {
	if t.Test {
		return gomod.ExecName(pkg) + ".test"
	}
	return gomod.ExecName(pkg)
}

// String names the target in errors and logs: "k8s.io/kubernetes@v1.36.3
// (cmd/kubeadm, cmd/kubelet)".
func (t Target) String() string {
	if len(t.Modules) == 0 {
		return "(no module)"
	}
	m := t.Modules[0]
	rel := make([]string, len(t.Packages))
	for i, p := range t.Packages {
		rel[i] = strings.TrimPrefix(strings.TrimPrefix(p, m.Path), "/")
		if rel[i] == "" {
			rel[i] = "."
		}
	}
	return fmt.Sprintf("%s@%s (%s)", m.Path, m.Version, strings.Join(rel, ", "))
}

// ldflags returns the -ldflags value: stripped, plus t.LDFlags.
func (t Target) ldflags() string {
	return strings.Join(append([]string{"-s", "-w"}, t.LDFlags...), " ")
}

// GCFlags is the -gcflags value of every build. The linker's -w drops the
// DWARF the compiler writes, so the compiler need not write it: on a cold
// build of etcd v3.6.8 (make bench-gobuild SIDES="dwarf nodwarf", 2 CPUs)
// it cut the wall time 0.85 times and the CPU time 0.86 times. The
// binaries are not byte-identical (the build ID and the recorded build
// settings change, and with them the layout), so it is part of the output
// hash.
const GCFlags = "all=-dwarf=false"

// HarnessEnv and HarnessFlags are how the harness's own programs are
// compiled: its command line (scripts/capd-e2e.sh builds cmd/capd-e2e so),
// the suite (`capd-e2e images` compiles it) and the cert-manager
// substitute's binary. Static, without the compiler's DWARF, and not
// -trimpath (config.HarnessRoot finds the harness's files from its own
// source path). One way for all of them, so that the go command compiles
// each package they share once: the substitute's 584 packages are all but
// two among the suite's 940.
var (
	HarnessEnv   = []string{"CGO_ENABLED=0"}
	HarnessFlags = []string{"-gcflags=" + GCFlags}
)

// args returns the go command's arguments for building into out (a
// directory path ending in a separator).
func (t Target) args(out string) []string {
	args := []string{"build", "-mod=mod"}
	if t.Test {
		args = []string{"test", "-c", "-mod=mod"}
		out += t.binaryName(t.Packages[0])
	}
	if !t.Harness {
		args = append(args, "-trimpath")
	}
	args = append(args, "-buildvcs=false", "-gcflags", GCFlags, "-ldflags", t.ldflags())
	if len(t.Tags) > 0 {
		args = append(args, "-tags", strings.Join(t.Tags, ","))
	}
	args = append(args, "-o", out)
	return append(args, t.Packages...)
}

// listArgs returns the arguments of a go list that loads every package
// the build compiles, so downloading every module it needs, and prints only
// errors.
func (t Target) listArgs() []string {
	args := []string{"list", "-mod=mod", "-deps", "-f", "{{with .Error}}{{.}}{{end}}"}
	if t.Test {
		args = append(args, "-test")
	}
	if len(t.Tags) > 0 {
		args = append(args, "-tags", strings.Join(t.Tags, ","))
	}
	return append(args, t.Packages...)
}

// env returns the environment of the go command: the process's, with the
// settings that make the build independent of where it runs.
func (t Target) env() []string {
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		for _, k := range []string{"CGO_ENABLED=", "GOOS=", "GOARCH=", "GOFLAGS=", "GOWORK=", "GOTOOLCHAIN="} {
			if strings.HasPrefix(e, k) {
				return true
			}
		}
		return false
	})
	cgo := "0"
	if t.CGO {
		cgo = "1"
	}
	env = append(env, "CGO_ENABLED="+cgo, "GOOS=linux", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=")
	if t.GOARCH != "" {
		env = append(env, "GOARCH="+t.GOARCH)
	}
	return env
}

// outputHash identifies the binaries a build makes: toolchain, wrapper
// go.mod (which pins every module), packages and flags.
func (t Target) outputHash(goVersion string, gomod []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "gobuild/v2\n%s\n%s\n%q\n%q\n%t\n%q\n%q\n%s\n", goVersion, gomod, t.Packages, t.Tags, t.CGO, GCFlags, t.ldflags(), t.GOARCH)
	// Only when set, so that the other builds keep their outputs.
	if t.Harness {
		fmt.Fprintf(h, "harness\n")
	}
	if t.Test {
		fmt.Fprintf(h, "test\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// wrapperDirName names the wrapper module's directory after the primary
// module and the go.mod content, so different replace sets never share a
// go.sum and the directory is recognisable.
func wrapperDirName(m module.Version, gomod []byte) string {
	sum := sha256.Sum256(gomod)
	name := strings.NewReplacer("/", "_", "@", "_").Replace(m.Path) + "@" + m.Version
	return name + "-" + hex.EncodeToString(sum[:])[:12]
}

func complete(dir string, binaries map[string]string) bool {
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	for _, p := range binaries {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// lockDir takes an exclusive file lock on dir, waiting until ctx ends.
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil // closing unlocks anyway
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close() // the lock file, unlocked and unwritten
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close() // the lock file, unlocked and unwritten
			return nil, fmt.Errorf("lock %s: %w", dir, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func (b *Builder) goCommand() string {
	if b.GoCommand != "" {
		return b.GoCommand
	}
	return "go"
}

// toolchain returns the go command's version, e.g. "go1.26.8".
func (b *Builder) toolchain(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.goVersion != "" {
		return b.goVersion, nil
	}
	cmd := exec.CommandContext(ctx, b.goCommand(), "env", "GOVERSION")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("run %s env GOVERSION: %w: %s", b.goCommand(), err, strings.TrimSpace(stderr.String()))
	}
	b.goVersion = strings.TrimSpace(string(out))
	return b.goVersion, nil
}

// Download fetches a module version into the module cache (a no-op when it
// is there) and describes it, with b's go command (see gomod.Download).
func (b *Builder) Download(ctx context.Context, m module.Version) (gomod.ModuleInfo, error) {
	return gomod.Download(ctx, b.goCommand(), m)
}

func (b *Builder) goMods(ctx context.Context, mods []module.Version) ([]sourceModule, error) {
	out := make([]sourceModule, 0, len(mods))
	for _, m := range mods {
		info, err := b.Download(ctx, m)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(info.GoMod)
		if err != nil {
			return nil, fmt.Errorf("read go.mod of %s@%s: %w", m.Path, m.Version, err)
		}
		out = append(out, sourceModule{Mod: m, GoMod: data})
	}
	return out, nil
}

// logEnv returns the settings of env that decide what the go command builds
// and how (those env sets, and GOGC), for the log: make bench-gobuild
// replays a logged build with them.
func logEnv(env []string) []string {
	var out []string
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		switch k {
		case "CGO_ENABLED", "GOOS", "GOARCH", "GOFLAGS", "GOWORK", "GOTOOLCHAIN", "GOGC":
			out = append(out, e)
		}
	}
	return out
}

// run runs the go command in dir, writing its output to logPath (and to
// b.Output). A failure's error names the log and carries its last lines.
func (b *Builder) run(ctx context.Context, dir string, env []string, logPath string, args ...string) error {
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "# in %s\n# env %s\n# %s %s\n", dir, shellQuote(logEnv(env)), b.goCommand(), shellQuote(args))
	var w io.Writer = logf
	if b.Output != nil {
		w = io.MultiWriter(logf, b.Output)
	}
	cmd := exec.CommandContext(ctx, b.goCommand(), args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = w, w
	// Let the go command clean up its compilers when cancelled.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	runErr := cputime.Run(ctx, cmd)
	fmt.Fprintf(logf, "# exit: %v after %s\n", runErr, time.Since(start).Round(time.Second))
	if runErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		runErr = fmt.Errorf("%w (%w)", ctx.Err(), runErr)
	}
	n := b.TailLines
	if n == 0 {
		n = 40
	}
	return fmt.Errorf("go %s: %w; last lines of %s:\n%s", args[0], runErr, logPath, tail(logPath, n))
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
