package logs

import (
	"archive/tar"
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
// root/haproxy.cfg.
//
// Only directories and regular files are written, with modes 0755 and 0644
// whatever the archive says. Symbolic and hard links, devices and FIFOs are
// ignored. An entry whose name is absolute or climbs out with ".." is not
// written; its name is returned in skipped. Writes go through an os.Root
// opened on root, so nothing, not even a symbolic link already in root, can
// lead a write outside it.
func extract(r io.Reader, root, dest string) (skipped []string, err error) {
	if !filepath.IsLocal(dest) {
		return nil, fmt.Errorf("extract into %q: destination is not a local path", dest)
	}
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	defer rt.Close()

	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return skipped, nil
		}
		if err != nil {
			return skipped, fmt.Errorf("read tar stream: %w", err)
		}
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			continue
		}
		name, ok := entryPath(h.Name, dest)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%q", h.Name))
			continue
		}
		if h.Typeflag == tar.TypeDir {
			if err := rt.MkdirAll(name, 0o755); err != nil {
				return skipped, fmt.Errorf("extract %q: %w", h.Name, err)
			}
			continue
		}
		if err := writeEntry(rt, name, tr); err != nil {
			return skipped, fmt.Errorf("extract %q: %w", h.Name, err)
		}
	}
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

func writeEntry(rt *os.Root, name string, r io.Reader) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := rt.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := rt.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}
