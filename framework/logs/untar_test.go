package logs

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type entry struct {
	name, link string
	typ        byte
	mode       int64
	body       string
}

func tarOf(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: mode, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func TestExtractRenamesTopComponent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	skipped, err := extract(tarOf(t,
		entry{name: "pods/", typ: tar.TypeDir},
		entry{name: "pods/ns_p_1/c/", typ: tar.TypeDir, mode: 0o700},
		entry{name: "pods/ns_p_1/c/0.log", typ: tar.TypeReg, mode: 0o4755, body: "line\n"},
		entry{name: "./pods/ns_p_1/c/1.log", typ: tar.TypeReg, body: "dot-slash\n"},
	), root, "out")
	if err != nil || len(skipped) > 0 {
		t.Fatalf("extract: %v, skipped %v", err, skipped)
	}
	assertFiles(t, root, map[string]string{"out/ns_p_1/c/0.log": "line\n", "out/ns_p_1/c/1.log": "dot-slash\n"})
	// Modes from the archive (setuid here) are not carried over.
	fi, err := os.Stat(filepath.Join(root, "out/ns_p_1/c/0.log"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o644 {
		t.Errorf("mode = %v, want -rw-r--r--", fi.Mode())
	}

	// A single file is named after dest.
	if _, err := extract(tarOf(t, entry{name: "haproxy.cfg", typ: tar.TypeReg, body: "cfg\n"}), root, "lb.cfg"); err != nil {
		t.Fatal(err)
	}
	assertFiles(t, root, map[string]string{"lb.cfg": "cfg\n"})
}

func TestExtractRejectsEscapes(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A symbolic link already in the output folder must not be followed
	// out of it.
	if err := os.Symlink(outside, filepath.Join(root, "trap")); err != nil {
		t.Fatal(err)
	}

	skipped, err := extract(tarOf(t,
		entry{name: "pods/ok.log", typ: tar.TypeReg, body: "ok\n"},
		entry{name: "/etc/abs", typ: tar.TypeReg, body: "x"},
		entry{name: "pods/../../outside/up", typ: tar.TypeReg, body: "x"},
		entry{name: "../outside/up2", typ: tar.TypeReg, body: "x"},
		entry{name: `pods\..\..\win`, typ: tar.TypeReg, body: "x"},
		entry{name: "pods/link", typ: tar.TypeSymlink, link: "/etc/passwd"},
		entry{name: "pods/hard", typ: tar.TypeLink, link: "/etc/passwd"},
		entry{name: "pods/fifo", typ: tar.TypeFifo},
	), root, "pods")
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	want := []string{`"/etc/abs"`, `"pods/../../outside/up"`, `"../outside/up2"`, `"pods\\..\\..\\win"`}
	if !slices.Equal(skipped, want) {
		t.Errorf("skipped = %q, want %q", skipped, want)
	}
	assertFiles(t, root, map[string]string{"pods/ok.log": "ok\n"})
	assertAbsent(t, root, "pods/link", "pods/hard", "pods/fifo")
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("files written outside the output folder: %v", entries)
	}

	// Through the planted link: os.Root refuses, and says so.
	_, err = extract(tarOf(t, entry{name: "x/escaped", typ: tar.TypeReg, body: "x"}), root, "trap")
	if err == nil {
		t.Error("writing through a symlink out of the folder succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("files written outside the output folder: %v", entries)
	}
}

func TestExtractTruncatedStream(t *testing.T) {
	t.Parallel()
	full := tarOf(t, entry{name: "pods/a.log", typ: tar.TypeReg, body: "0123456789"}).Bytes()
	root := t.TempDir()
	if _, err := extract(bytes.NewReader(full[:516]), root, "pods"); err == nil {
		t.Error("want an error for a truncated stream")
	}
}

func TestEachEntryReadsConcatenatedArchives(t *testing.T) {
	t.Parallel()
	var stream bytes.Buffer
	stream.Write(tarOf(t, entry{name: "a", typ: tar.TypeReg, body: "1"}).Bytes())
	stream.Write(make([]byte, 10240)) // GNU tar's record padding
	stream.Write(tarOf(t).Bytes())    // an empty archive
	stream.Write(tarOf(t, entry{name: "b/", typ: tar.TypeDir}, entry{name: "b/c", typ: tar.TypeReg, body: "22"}).Bytes())
	var got []string
	err := eachEntry(&stream, func(h *tar.Header, r io.Reader) error {
		b, _ := io.ReadAll(r)
		got = append(got, h.Name+"="+string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a=1", "b/=", "b/c=22"}; !slices.Equal(got, want) {
		t.Errorf("entries = %q, want %q", got, want)
	}

	// A stream cut inside an entry is an error, not a quiet end.
	full := tarOf(t, entry{name: "a", typ: tar.TypeReg, body: strings.Repeat("x", 1000)}).Bytes()
	err = eachEntry(bytes.NewReader(full[:700]), func(_ *tar.Header, r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut stream: err = %v, want unexpected EOF", err)
	}
}

func TestExtractHardLinkGetsContent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// tar --dereference stores a file reached a second time as a link.
	_, err := extract(tarOf(t,
		entry{name: "pods/a/0.log", typ: tar.TypeReg, body: "same\n"},
		entry{name: "pods/b/0.log", typ: tar.TypeLink, link: "pods/a/0.log"},
		entry{name: "pods/c/0.log", typ: tar.TypeLink, link: "pods/never-written"},
	), root, "out")
	if err != nil {
		t.Fatal(err)
	}
	assertFiles(t, root, map[string]string{"out/a/0.log": "same\n", "out/b/0.log": "same\n"})
	assertAbsent(t, root, "out/c/0.log")
}

func TestExtractNeverWidensModes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if _, err := extract(tarOf(t,
		entry{name: "etc/private.key", typ: tar.TypeReg, mode: 0o600, body: "k"},
		entry{name: "etc/group-readable", typ: tar.TypeReg, mode: 0o640, body: "g"},
		entry{name: "etc/tool", typ: tar.TypeReg, mode: 0o4777, body: "x"},
		entry{name: "etc/link", link: "etc/private.key", typ: tar.TypeLink},
	), root, "out"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"private.key": 0o600, "group-readable": 0o640, "tool": 0o644, "link": 0o600} {
		fi, err := os.Stat(filepath.Join(root, "out", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
}
