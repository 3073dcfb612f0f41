package gomod

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/capd-e2e/capd-e2e/internal/cputime"
)

// Tool is a main package of a module, built as a program the harness runs
// on the host (kustomize, say).
type Tool struct {
	// Module and Version are the module holding the package, at the version
	// to build. Required. The module's go.mod must have no replace
	// directives (`go install pkg@version` refuses those).
	Module, Version string
	// Package is the main package's import path. If unset, Module.
	Package string
	// LDFlags are extra linker flags (-X settings). Optional.
	LDFlags []string
}

// Install builds t with `go install pkg@version` into the cache directory
// (CacheDir, tools/) and returns the binary's path. A binary built earlier
// from the same tool, flags and go version is reused without running the
// go command. It is safe for concurrent use, also by several processes: each
// builds into a directory of its own and renames it into place.
func Install(ctx context.Context, t Tool) (string, error) {
	pkg := t.Package
	if pkg == "" {
		pkg = t.Module
	}
	if t.Module == "" || t.Version == "" {
		return "", fmt.Errorf("install tool %q: Module and Version are required", pkg)
	}
	what := pkg + "@" + t.Version
	cache, err := CacheDir()
	if err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	goVersion, err := goEnv(ctx, "GOVERSION")
	if err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	sum := sha256.Sum256([]byte(strings.Join(append([]string{pkg, t.Version, goVersion}, t.LDFlags...), "\x00")))
	dir := filepath.Join(cache, "tools", path.Base(pkg)+"-"+t.Version+"-"+hex.EncodeToString(sum[:])[:12])
	bin := filepath.Join(dir, ExecName(pkg))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-")
	if err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	defer os.RemoveAll(tmp)
	args := []string{"install", "-trimpath"}
	if len(t.LDFlags) > 0 {
		args = append(args, "-ldflags", strings.Join(t.LDFlags, " "))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, what)...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cputime.Run(ctx, cmd); err != nil {
		return "", fmt.Errorf("go install %s: %w: %s", what, err, strings.TrimSpace(out.String()))
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) {
		// Another process may have put the same build in place first.
		if _, serr := os.Stat(bin); serr != nil {
			return "", fmt.Errorf("install %s: %w", what, err)
		}
	}
	return bin, nil
}

// ExecName returns the name `go build` and `go install` give the binary of
// a main package: the last element of its import path, or the one before a
// major-version suffix (sigs.k8s.io/kustomize/kustomize/v5 -> kustomize).
func ExecName(importPath string) string {
	elem := path.Base(importPath)
	if majorSuffix.MatchString(elem) {
		if dir := path.Dir(importPath); dir != "." {
			return path.Base(dir)
		}
	}
	return elem
}

var majorSuffix = regexp.MustCompile(`^v[2-9][0-9]*$`)

func goEnv(ctx context.Context, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", name)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
