package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWritePrivate(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := t.TempDir()

	check := func(p, want string) {
		t.Helper()
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a regular file of mode 0600", p, fi.Mode())
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s holds %q, want %q", p, b, want)
		}
	}

	// A new file.
	p := filepath.Join(dir, "kubeconfig")
	if err := WritePrivate(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	check(p, "one")

	// An existing file with a wider mode is narrowed.
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivate(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	check(p, "two")

	// A symbolic link is replaced, its target left alone.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("target"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivate(link, []byte("three")); err != nil {
		t.Fatal(err)
	}
	check(link, "three")
	if b, _ := os.ReadFile(target); string(b) != "target" {
		t.Error("the link's target was written")
	}

	// No temporary file is left behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d entries in the folder, want 2", len(entries))
	}

	// A missing folder is an error that names the file.
	missing := filepath.Join(dir, "nope", "key")
	if err := WritePrivate(missing, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("error = %v, want one naming %s", err, missing)
	}
}
