// Package debian builds Debian root file systems with debootstrap and stores
// each as a one-layer image (plan.KindRootfs), for the node, network and
// load balancer images to build on.
//
// debootstrap runs on the host, as root, from Debian's own package (installed
// with apt-get when missing); it only needs Debian's archive. The package
// must not pull an image or run a container: the result goes to the engine
// through package oci. Whether a rootfs is rebuilt is the plan's decision
// (the step hash covers suite, mirror, variant and packages), not this
// package's.
package debian

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
)

// Files are the repository paths whose content shapes the rootfs images
// (this package's sources, not its tests); give them to plan.Options.Files
// for plan.KindRootfs so that a change rebuilds them.
var Files = []string{"factory/debian/debian.go", "factory/oci"}

// RootfsBuilder builds plan.KindRootfs steps.
type RootfsBuilder struct {
	// Images stores the result. Required.
	Images runtime.Images
	// WorkDir holds the root file system while it is made (about 300 MB
	// for the node rootfs); it must allow devices and executables. If
	// unset, os.TempDir().
	WorkDir string
	// Log receives debootstrap's and apt-get's output; if nil, it is
	// discarded (a failure's error still carries the output's tail).
	Log io.Writer
	// Debootstrap is the debootstrap command; if unset, "debootstrap" from
	// PATH, installed with apt-get when it is missing.
	Debootstrap string
	// CacheDir, if set, keeps the downloaded packages (debootstrap
	// --cache-dir) for the next rootfs, which shares most of them;
	// debootstrap checks them against the archive's index before use. If
	// unset, each rootfs downloads all of its packages.
	CacheDir string
}

var _ plan.Builder = (*RootfsBuilder)(nil)

// Build makes the rootfs of step with debootstrap, cleans it (apt caches
// and lists, /dev, host-specific files), slims it (Slim) and stores it as
// step.Image, labelled with step.Labels().
func (b *RootfsBuilder) Build(ctx context.Context, step plan.Step) error {
	if b.Images == nil {
		return errors.New("build rootfs: RootfsBuilder.Images is nil")
	}
	bin, err := b.debootstrap(ctx)
	if err != nil {
		return fmt.Errorf("build rootfs %q: %w", step.Image, err)
	}
	tmp, err := os.MkdirTemp(b.WorkDir, "capd-e2e-rootfs-*")
	if err != nil {
		return fmt.Errorf("build rootfs %q: %w", step.Image, err)
	}
	defer removeTree(tmp)
	dir := filepath.Join(tmp, "root")

	args, err := DebootstrapArgs(step.Inputs, dir)
	if err != nil {
		return fmt.Errorf("build rootfs %q: %w", step.Image, err)
	}
	if b.CacheDir != "" {
		cache, err := filepath.Abs(b.CacheDir) // debootstrap wants it absolute
		if err == nil {
			err = os.MkdirAll(cache, 0o755)
		}
		if err != nil {
			return fmt.Errorf("build rootfs %q: package cache: %w", step.Image, err)
		}
		args = append([]string{"--cache-dir=" + cache}, args...)
	}
	if err := b.run(ctx, bin, args...); err != nil {
		return fmt.Errorf("build rootfs %q: %w", step.Image, err)
	}
	if err := Clean(dir); err != nil {
		return fmt.Errorf("build rootfs %q: %w", step.Image, err)
	}
	if err := Slim(dir); err != nil {
		return fmt.Errorf("build rootfs %q: %w", step.Image, err)
	}
	err = oci.Build(ctx, b.Images, oci.Spec{
		Ref:    step.Image,
		Layers: []oci.Layer{oci.LayerFromDir(dir)},
		Config: oci.Config{Labels: step.Labels()},
	})
	if err != nil {
		return fmt.Errorf("build rootfs %q: %w", step.Image, err)
	}
	return nil
}

// DebootstrapArgs returns debootstrap's arguments that make a rootfs
// step's inputs in dir: [--variant=V] [--include=a,b] suite dir mirror.
func DebootstrapArgs(in map[string]string, dir string) ([]string, error) {
	suite, mirror := in[plan.InputSuite], in[plan.InputMirror]
	if suite == "" || mirror == "" {
		return nil, fmt.Errorf("inputs %q and %q are required", plan.InputSuite, plan.InputMirror)
	}
	var args []string
	if v := in[plan.InputVariant]; v != "" {
		args = append(args, "--variant="+v)
	}
	if pkgs := strings.Fields(in[plan.InputPackages]); len(pkgs) > 0 {
		args = append(args, "--include="+strings.Join(pkgs, ","))
	}
	return append(args, suite, dir, mirror), nil
}

// Clean removes from a fresh rootfs what must not be baked into an image:
// downloaded packages and package lists (large, and stale by the time the
// image runs), device nodes (the engine provides /dev) and files describing
// the build host (resolv.conf, hostname, hosts), which the engine mounts.
func Clean(dir string) error {
	for _, pattern := range []string{
		"var/cache/apt/archives/*.deb",
		"var/cache/apt/*.bin",
		"var/lib/apt/lists/*_*",
		"dev/*",
		"var/log/*.log",
		"var/log/apt/*",
		"etc/resolv.conf",
		"etc/hostname",
		"etc/hosts",
	} {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return fmt.Errorf("clean rootfs: %w", err)
		}
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("clean rootfs: %w", err)
			}
		}
	}
	// An empty machine-id makes systemd generate one at boot (and kind's
	// entrypoint does too), so containers of one image do not share it.
	if err := os.WriteFile(filepath.Join(dir, "etc/machine-id"), nil, 0o444); err != nil {
		return fmt.Errorf("clean rootfs: %w", err)
	}
	return nil
}

// slimDirs are the folders Slim empties: documentation, manual and info
// pages, translations, and the lint tools' overrides. Nothing in a node, a
// load balancer or a CNI container reads them.
var slimDirs = []string{
	"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
	"usr/share/groff", "usr/share/lintian", "usr/share/linda",
}

// SlimDpkgConfig is the dpkg configuration Slim writes, so that a package
// installed into the rootfs later leaves the same files out.
const SlimDpkgConfig = "etc/dpkg/dpkg.cfg.d/capd-e2e-slim"

// Slim removes from a fresh rootfs what a container never reads, as
// Debian's own "slim" container images leave it out: every file under
// slimDirs, except each package's copyright file (usr/share/doc/*/copyright,
// kept for its license) and the symbolic links among usr/share/doc's
// entries (a package's doc folder pointing to another's). The net rootfs,
// which every node unpacks into its containerd when it starts kube-proxy
// and kube-router, went from 147 MB and 6297 entries to 100 MB and 3791
// (du and find over its files).
func Slim(dir string) error {
	for _, d := range slimDirs {
		root := filepath.Join(dir, d)
		entries, err := os.ReadDir(root)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("slim rootfs: %w", err)
		}
		for _, e := range entries {
			p := filepath.Join(root, e.Name())
			if d == "usr/share/doc" && e.Type()&os.ModeSymlink != 0 {
				continue
			}
			if d == "usr/share/doc" && e.IsDir() {
				err = keepOnly(p, "copyright")
			} else {
				err = os.RemoveAll(p)
			}
			if err != nil {
				return fmt.Errorf("slim rootfs: %w", err)
			}
		}
	}
	var cfg strings.Builder
	cfg.WriteString("# Written by capd-e2e (factory/debian.Slim): leave out what a\n# container never reads, keeping each package's copyright file.\n")
	for _, d := range slimDirs {
		fmt.Fprintf(&cfg, "path-exclude /%s/*\n", d)
	}
	cfg.WriteString("path-include /usr/share/doc/*/copyright\n")
	p := filepath.Join(dir, SlimDpkgConfig)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("slim rootfs: %w", err)
	}
	if err := os.WriteFile(p, []byte(cfg.String()), 0o644); err != nil {
		return fmt.Errorf("slim rootfs: %w", err)
	}
	return nil
}

// keepOnly removes everything in folder dir except its entry named keep.
func keepOnly(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// debootstrap returns the debootstrap command, installing Debian's package
// when it is missing.
func (b *RootfsBuilder) debootstrap(ctx context.Context) (string, error) {
	if b.Debootstrap != "" {
		return b.Debootstrap, nil
	}
	if p, err := exec.LookPath("debootstrap"); err == nil {
		return p, nil
	}
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	if err := b.runEnv(ctx, env, "apt-get", "install", "-y", "--no-install-recommends", "debootstrap"); err != nil {
		// The package lists may be missing or stale: refresh once.
		if err := b.runEnv(ctx, env, "apt-get", "update"); err != nil {
			return "", fmt.Errorf("install debootstrap: %w", err)
		}
		if err := b.runEnv(ctx, env, "apt-get", "install", "-y", "--no-install-recommends", "debootstrap"); err != nil {
			return "", fmt.Errorf("install debootstrap: %w", err)
		}
	}
	p, err := exec.LookPath("debootstrap")
	if err != nil {
		return "", fmt.Errorf("install debootstrap: installed, but: %w", err)
	}
	return p, nil
}

func (b *RootfsBuilder) run(ctx context.Context, name string, args ...string) error {
	return b.runEnv(ctx, nil, name, args...)
}

// runEnv runs a host command, copying its output to b.Log; a failure's
// error carries the output's tail.
func (b *RootfsBuilder) runEnv(ctx context.Context, env []string, name string, args ...string) error {
	var tail tailBuffer
	var out io.Writer = &tail
	if b.Log != nil {
		out = io.MultiWriter(b.Log, &tail)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cputime.Run(ctx, cmd); err != nil {
		msg := strings.TrimSpace(tail.String())
		return fmt.Errorf("run %s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(bytes.ToValidUTF8(t.b, nil)) }

// removeTree removes a rootfs tree, first unmounting anything debootstrap
// left mounted below it (it mounts /proc and /sys in the target and, when
// interrupted, may not unmount them): removing through a mount of the
// host's /sys or /proc would be harmful.
func removeTree(dir string) {
	if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil {
		var targets []string
		for _, line := range strings.Split(string(mounts), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
				targets = append(targets, f[1])
			}
		}
		for i := len(targets) - 1; i >= 0; i-- { // innermost first
			_ = exec.Command("umount", "-l", targets[i]).Run() // checked below, mount point by mount point
		}
		for _, t := range targets {
			if exec.Command("mountpoint", "-q", t).Run() == nil {
				return // still mounted: leave the tree rather than risk it
			}
		}
	}
	_ = os.RemoveAll(dir) // a temporary tree; what stays is under the cache, found and replaced next time
}
