package logs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// extract unpacks a tar stream as the engine returns it for a copy of one
// path — every entry named relative to that path's parent, so the first name
// component is the path's base name — into root/dest, dest taking the place
// of that first component. A directory /var/log/pods copied to "pods" gives
// root/pods/<ns>_<pod>_<uid>/..., a file copied to "haproxy.cfg" gives
// root/haproxy.cfg. See unpacker for what is written.
func extract(r io.Reader, root, dest string) (skipped []string, err error) {
	u, err := newUnpacker(root, dest)
	if err != nil {
		return nil, err
	}
	defer u.close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return u.skipped, nil
		}
		if err != nil {
			return u.skipped, fmt.Errorf("read tar stream: %w", err)
		}
		if err := u.entry(h, tr); err != nil {
			return u.skipped, err
		}
	}
}

// unpacker writes the entries of one copied tree into root/dest.
//
// Only directories, regular files and hard links to a regular file already
// written by the same unpacker are written: directories 0755, files with
// the archive's permission bits but never more than 0644 (no execute bit,
// no write for others), so that a file private in the machine (0600) stays
// private in the artifacts. Symbolic links, devices, FIFOs and other hard
// links are ignored. An entry whose name is absolute or climbs out with ".."
// is not written; its name is kept in skipped. Writes go through an os.Root
// opened on root, so nothing, not even a symbolic link already in root, can
// lead a write outside it.
type unpacker struct {
	rt      *os.Root
	dest    string
	skipped []string
}

func newUnpacker(root, dest string) (*unpacker, error) {
	if !filepath.IsLocal(dest) {
		return nil, fmt.Errorf("extract into %q: destination is not a local path", dest)
	}
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	return &unpacker{rt: rt, dest: dest}, nil
}

func (u *unpacker) close() { _ = u.rt.Close() } // a directory handle: nothing written through it

// entry writes one entry; r reads its content.
func (u *unpacker) entry(h *tar.Header, r io.Reader) error {
	switch h.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeLink:
	default:
		return nil
	}
	name, ok := entryPath(h.Name, u.dest)
	if !ok {
		u.skipped = append(u.skipped, fmt.Sprintf("%q", h.Name))
		return nil
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := u.rt.MkdirAll(name, 0o755); err != nil {
			return fmt.Errorf("extract %q: %w", h.Name, err)
		}
		return nil
	}
	mode := os.FileMode(h.Mode) & 0o644
	switch h.Typeflag {
	case tar.TypeLink:
		// tar stores a file it meets a second time (through another hard
		// link, or another symbolic link with --dereference) as a link to
		// the first name; give the second name a copy of its content.
		target, ok := entryPath(h.Linkname, u.dest)
		if !ok {
			return nil
		}
		src, err := u.rt.Open(target)
		if err != nil {
			return nil // not written by this unpacker: nothing to copy
		}
		defer src.Close()
		fi, err := src.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		r, mode = src, fi.Mode().Perm()
	}
	if err := writeEntry(u.rt, name, r, mode); err != nil {
		return fmt.Errorf("extract %q: %w", h.Name, err)
	}
	return nil
}

// entryPath maps a tar entry name to its path under the output folder,
// replacing the first component with dest. It reports false for names that
// are absolute or leave their tree.
func entryPath(name, dest string) (string, bool) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) {
		return "", false
	}
	// Reject ".." before cleaning: "a/../../b" would otherwise be cleaned
	// into something that looks local yet was meant to escape.
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", false
		}
	}
	clean := path.Clean(name)
	rest := ""
	if i := strings.IndexByte(clean, '/'); i >= 0 {
		rest = clean[i+1:]
	}
	out := filepath.Join(dest, filepath.FromSlash(rest))
	return out, filepath.IsLocal(out)
}

func writeEntry(rt *os.Root, name string, r io.Reader, mode os.FileMode) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := rt.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := rt.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	// The mode of an existing file, and against the umask.
	return errors.Join(err, f.Chmod(mode), f.Close())
}

// eachEntry calls fn for every entry of a stream made of tar archives one
// after the other, as several tar commands writing to the same output
// produce. Zero blocks between archives (end-of-archive markers, and the
// padding GNU tar adds up to its record size) are skipped, like GNU tar's
// --ignore-zeros. It returns nil at the end of the stream, fn's first
// error, or the error that broke the stream.
func eachEntry(r io.Reader, fn func(h *tar.Header, r io.Reader) error) error {
	var zero [512]byte
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		for {
			b, err := br.Peek(len(zero))
			if len(b) == 0 && errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read tar stream: %w", noEOF(err))
			}
			if !bytes.Equal(b, zero[:]) {
				break
			}
			_, _ = br.Discard(len(zero)) // Peek returned these bytes: they are buffered
		}
		tr := tar.NewReader(br)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("read tar stream: %w", err)
			}
			if err := fn(h, tr); err != nil {
				return err
			}
		}
	}
}

// noEOF turns a bare io.EOF in the middle of a block into the error it is.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
