package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// tarHeaders returns the headers of the entries of tar stream b, in order.
func tarHeaders(t *testing.T, b []byte) []*tar.Header {
	t.Helper()
	var headers []*tar.Header
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return headers
		}
		if err != nil {
			t.Fatal(err)
		}
		headers = append(headers, h)
	}
}

// layerNames returns the names of l's entries, in order.
func layerNames(t *testing.T, l Layer) []string {
	t.Helper()
	var names []string
	for _, h := range tarHeaders(t, readLayer(t, l)) {
		names = append(names, h.Name)
	}
	return names
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
	for _, h := range tarHeaders(t, first) {
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
	names := layerNames(t, LayerFromFiles([]File{{Path: "/x/y/z", Data: []byte("1")}, {Path: "x/l", Link: "y/z"}}))
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

func writeTarGz(t *testing.T, entries ...*tar.Header) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(h.Name + " content")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rootfs.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTarGz(t *testing.T) {
	reg := func(name string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(name + " content"))}
	}
	p := writeTarGz(t,
		&tar.Header{Name: "./etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		reg("./etc/passwd"), reg("./etc/group"),
		&tar.Header{Name: "./etc/os-release", Typeflag: tar.TypeSymlink, Linkname: "../usr/lib/os-release"},
	)
	got, err := ReadTarGz(p, "etc/passwd", "/etc/group")
	if err != nil {
		t.Fatal(err)
	}
	if string(got["etc/passwd"]) != "./etc/passwd content" || string(got["etc/group"]) != "./etc/group content" || len(got) != 2 {
		t.Errorf("ReadTarGz = %q", got)
	}
	if _, err := ReadTarGz(p, "etc/passwd", "etc/shadow", "etc/hosts"); err == nil || !strings.Contains(err.Error(), "no etc/hosts, etc/shadow") {
		t.Errorf("missing files: %v", err)
	}
	if _, err := ReadTarGz(p, "etc/os-release"); err == nil || !strings.Contains(err.Error(), "etc/os-release is not a regular file") {
		t.Errorf("symlink: %v", err)
	}

	// The layer is the archive's tar stream, entries as they are.
	names := layerNames(t, LayerFromTarGz(p))
	if want := "./etc/ ./etc/passwd ./etc/group ./etc/os-release"; strings.Join(names, " ") != want {
		t.Errorf("layer entries = %v, want %s", names, want)
	}
	if _, err := LayerFromTarGz(filepath.Join(t.TempDir(), "nope.tar.gz"))(); err == nil {
		t.Error("a missing archive made a layer")
	}
	if _, err := LayerFromTarGz(writeNotGzip(t))(); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("an uncompressed archive: %v", err)
	}
}

func writeNotGzip(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "plain.tar.gz")
	if err := os.WriteFile(p, []byte("this is a plain file, not a gzip archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
