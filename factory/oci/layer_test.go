package oci

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func readLayer(t *testing.T, l Layer) []byte {
	t.Helper()
	rc, err := l()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The digest is computed on one read and the archive written on another:
// both must give the same bytes, even though reading changes atimes.
func TestLayerFromDirIsStable(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("content"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "a/b/f"), filepath.Join(dir, "a/hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b/f", filepath.Join(dir, "a/sym")); err != nil {
		t.Fatal(err)
	}
	first := readLayer(t, LayerFromDir(dir))
	second := readLayer(t, LayerFromDir(dir))
	if !bytes.Equal(first, second) {
		t.Fatal("two reads of the same directory differ")
	}
	got := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(first))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	if h := got["a/b/f"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o777 != 0o600 || h.Size != 7 {
		t.Errorf("regular file: %+v", h)
	}
	// WalkDir visits a/b/f before a/hard, so the second name is the link.
	if h := got["a/hard"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "a/b/f" {
		t.Errorf("hard link: %+v", h)
	}
	if h := got["a/sym"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "b/f" {
		t.Errorf("symlink: %+v", h)
	}
	if _, ok := got["a/"]; !ok {
		t.Errorf("directory entry missing: %v", got)
	}
}

func TestLayerFromFiles(t *testing.T) {
	b := readLayer(t, LayerFromFiles([]File{{Path: "/x/y/z", Data: []byte("1")}, {Path: "x/l", Link: "y/z"}}))
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	want := []string{"x/", "x/y/", "x/y/z", "x/l"}
	if len(names) != len(want) {
		t.Fatalf("entries %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("entries %v, want %v", names, want)
		}
	}
	if _, err := LayerFromFiles([]File{{Path: "../escape"}})(); err == nil {
		t.Error("a path leaving the root was accepted")
	}
}
