package repository

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClearPrevious(t *testing.T) {
	dir := t.TempDir()
	write := func(p string) {
		t.Helper()
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo := filepath.Join(dir, "repository")
	if err := clearPrevious(repo); err != nil {
		t.Errorf("a missing folder: %v", err)
	}
	// An earlier run's repository, with a version this run does not have.
	write("repository/" + configFile)
	write("repository/cluster-api/v1.14.99/core-components.yaml")
	write("repository/cluster-api/v1.14.2/core-components.yaml")
	if err := clearPrevious(repo); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(repo); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the earlier repository is still there: %v", err)
	}
	// Anything else is left, and named.
	write("repository/notes.txt")
	err := clearPrevious(repo)
	if err == nil || !strings.Contains(err.Error(), repo) || !strings.Contains(err.Error(), "no "+configFile) {
		t.Errorf("a folder of other files: %v, want an error naming it", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); err != nil {
		t.Errorf("the other files were removed: %v", err)
	}
}
