package debian

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/images/plan"
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
