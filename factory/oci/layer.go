package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// File is one entry of a layer made in memory.
type File struct {
	// Path inside the image, without a leading slash, e.g. "usr/local/bin/etcd".
	Path string
	// Mode is the permission bits; 0 means 0644 for files, 0755 for dirs.
	Mode int64
	// Data is a regular file's content.
	Data []byte
	// Link, if set, makes the entry a symlink to Link.
	Link string
	// Dir makes the entry a directory.
	Dir bool
}

// epoch is the mtime of in-memory entries: fixed, so equal content gives an
// equal layer digest.
var epoch = time.Unix(0, 0)

// LayerFromFiles makes a layer of files. Parent directories are added as
// needed.
func LayerFromFiles(files []File) Layer {
	return func() (io.ReadCloser, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		dirs := map[string]bool{}
		addDir := func(d string, mode int64) error {
			if d == "." || d == "" || dirs[d] {
				return nil
			}
			dirs[d] = true
			if mode == 0 {
				mode = 0o755
			}
			return tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: mode, ModTime: epoch})
		}
		for _, f := range files {
			p := strings.TrimPrefix(path.Clean(f.Path), "/")
			if p == "." || strings.HasPrefix(p, "../") {
				return nil, fmt.Errorf("layer file %q: invalid path", f.Path)
			}
			var parents []string
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				parents = append(parents, d)
			}
			slices.Reverse(parents)
			for _, d := range parents {
				if err := addDir(d, 0); err != nil {
					return nil, err
				}
			}
			var err error
			switch {
			case f.Dir:
				err = addDir(p, f.Mode)
			case f.Link != "":
				err = tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeSymlink, Linkname: f.Link, Mode: 0o777, ModTime: epoch})
			default:
				mode := f.Mode
				if mode == 0 {
					mode = 0o644
				}
				if err = tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(f.Data)), ModTime: epoch}); err == nil {
					_, err = tw.Write(f.Data)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("layer file %q: %w", f.Path, err)
			}
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		return io.NopCloser(&buf), nil
	}
}

// LayerFromDir makes a layer of the tree under dir, which becomes the image's
// root: regular files, directories, symlinks, hard links (kept as links),
// device nodes and FIFOs, with their modes and owners. The tar is streamed,
// not held in memory.
func LayerFromDir(dir string) Layer {
	return func() (io.ReadCloser, error) {
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("layer from directory: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("layer from directory: %s is not a directory", dir)
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeDir(pw, dir)) }()
		return pr, nil
	}
}

func writeDir(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	type inode struct{ dev, ino uint64 }
	seen := map[inode]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		h.Name = rel
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		// Reading a file changes its atime (and ctime may move): keep both
		// out, or the second read for the digest gives another stream.
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if st, ok := info.Sys().(*syscall.Stat_t); ok && info.Mode().IsRegular() && st.Nlink > 1 {
			key := inode{uint64(st.Dev), uint64(st.Ino)}
			if first, ok := seen[key]; ok {
				h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
			} else {
				seen[key] = rel
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if h.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("layer from directory %s: %w", root, err)
	}
	return tw.Close()
}

// LayerFromTarGz is the gzip-compressed tar archive at path as a layer,
// entries as they are, the way a Dockerfile's ADD unpacks a local archive
// (Alpine's minirootfs is published so, under a FROM scratch).
func LayerFromTarGz(path string) Layer {
	return func() (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("layer from archive: %w", err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("layer from archive %s: %w", path, err)
		}
		return gzipFile{zr, f}, nil
	}
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error { return errors.Join(g.Reader.Close(), g.f.Close()) }

// ReadTarGz returns the content of the regular files names (paths inside
// the archive, e.g. "etc/passwd"; a leading "./" or "/" in either is
// ignored) of the gzip-compressed tar archive at path. A name the archive
// lacks, or holds as other than a regular file, is an error.
func ReadTarGz(path string, names ...string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	clean := func(n string) string { return strings.TrimPrefix(strings.TrimPrefix(n, "./"), "/") }
	want := map[string]bool{}
	for _, n := range names {
		want[clean(n)] = true
	}
	out := map[string][]byte{}
	tr := tar.NewReader(zr)
	for len(out) < len(want) {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		n := clean(h.Name)
		if !want[n] {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s: %s is not a regular file", path, n)
		}
		if out[n], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, n, err)
		}
	}
	var missing []string
	for n := range want {
		if _, ok := out[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%s: no %s", path, strings.Join(missing, ", "))
	}
	return out, nil
}
