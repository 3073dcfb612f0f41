package secrets

import (
	"fmt"
	"os"
	"path/filepath"
)

// WritePrivate writes data to path with mode 0600, for files that must
// hold key material (a kubeconfig, a private key). It writes a temporary
// file in the same folder and renames it over path, so that the file never
// exists with a wider mode, an existing file's mode does not survive, and a
// symbolic link at path is replaced rather than followed. The folder must
// exist.
func WritePrivate(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write private file %q: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		// CreateTemp already uses 0600; say so, whatever it does.
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // the error returned is the write's
		return fmt.Errorf("write private file %q: %w", path, err)
	}
	return nil
}
