package debian

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/factory/plan"
)

func TestDebootstrapArgs(t *testing.T) {
	got, err := DebootstrapArgs(map[string]string{
		plan.InputSuite: "trixie", plan.InputMirror: "http://deb.debian.org/debian",
		plan.InputVariant: "minbase", plan.InputPackages: "bash systemd",
	}, "/tmp/root")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--variant=minbase", "--include=bash,systemd", "trixie", "/tmp/root", "http://deb.debian.org/debian"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got, err = DebootstrapArgs(map[string]string{plan.InputSuite: "trixie", plan.InputMirror: "http://m"}, "/r")
	if err != nil || !slices.Equal(got, []string{"trixie", "/r", "http://m"}) {
		t.Errorf("without variant and packages: %q, %v", got, err)
	}
	if _, err := DebootstrapArgs(map[string]string{plan.InputSuite: "trixie"}, "/r"); err == nil {
		t.Error("no error without a mirror")
	}
}

func TestClean(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{
		"var/cache/apt/archives/bash_5.2_amd64.deb", "var/cache/apt/archives/partial/keep",
		"var/lib/apt/lists/deb.debian.org_debian_dists_trixie_InRelease", "var/lib/apt/lists/lock",
		"dev/null", "etc/resolv.conf", "etc/hostname", "etc/machine-id", "etc/os-release",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Clean(dir); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(dir, p)); return err == nil }
	for _, gone := range []string{"var/cache/apt/archives/bash_5.2_amd64.deb", "var/lib/apt/lists/deb.debian.org_debian_dists_trixie_InRelease", "dev/null", "etc/resolv.conf", "etc/hostname"} {
		if exists(gone) {
			t.Errorf("%s was not removed", gone)
		}
	}
	for _, kept := range []string{"var/cache/apt/archives/partial/keep", "var/lib/apt/lists/lock", "dev", "etc/os-release"} {
		if !exists(kept) {
			t.Errorf("%s was removed", kept)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc/machine-id")); err != nil || len(b) != 0 {
		t.Errorf("machine-id: %q, %v; want empty", b, err)
	}
}

func TestSlim(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		"usr/share/doc/bash/copyright", "usr/share/doc/bash/README.gz", "usr/share/doc/bash/examples/x",
		"usr/share/man/man1/ls.1.gz", "usr/share/locale/de/LC_MESSAGES/coreutils.mo", "usr/share/info/dir",
		"usr/share/zoneinfo/UTC", "usr/bin/ls", "etc/dpkg/dpkg.cfg",
	}
	for _, p := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("bash", filepath.Join(dir, "usr/share/doc/bash-completion")); err != nil {
		t.Fatal(err)
	}
	if err := Slim(dir); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(dir, p)); return err == nil }
	for _, gone := range []string{"usr/share/doc/bash/README.gz", "usr/share/doc/bash/examples", "usr/share/man/man1",
		"usr/share/locale/de", "usr/share/info/dir"} {
		if exists(gone) {
			t.Errorf("%s was not removed", gone)
		}
	}
	for _, kept := range []string{"usr/share/doc/bash/copyright", "usr/share/doc/bash-completion", "usr/share/man",
		"usr/share/locale", "usr/share/zoneinfo/UTC", "usr/bin/ls", "etc/dpkg/dpkg.cfg"} {
		if !exists(kept) {
			t.Errorf("%s was removed", kept)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dir, SlimDpkgConfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"path-exclude /usr/share/doc/*", "path-exclude /usr/share/locale/*",
		"path-exclude /usr/share/man/*", "path-include /usr/share/doc/*/copyright"} {
		if !strings.Contains(string(cfg), line+"\n") {
			t.Errorf("%s lacks %q:\n%s", SlimDpkgConfig, line, cfg)
		}
	}
	// A rootfs without any of the folders is not an error.
	if err := Slim(t.TempDir()); err != nil {
		t.Errorf("empty rootfs: %v", err)
	}
}
