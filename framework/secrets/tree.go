package secrets

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
)

// Report is what ScanTree or RedactTree saw.
type Report struct {
	// Files is how many regular files were read, Bytes their total size.
	Files int
	Bytes int64
	// Binary lists the files skipped because a NUL byte in their first
	// 8000 bytes says they are not text (compressed logs, tarballs).
	Binary []string
	// Skipped lists what was not read because it is not a regular file:
	// symbolic links (never followed), sockets, pipes, devices.
	Skipped []string
	// Findings lists every secret, by path and line. From RedactTree, the
	// secrets that were replaced.
	Findings []Finding
	// Redacted lists the files RedactTree rewrote.
	Redacted []string

	modes map[string]fs.FileMode
}

// ExposedFile is a file that holds key material and can be read, written
// or run by others than its owner.
type ExposedFile struct {
	// Path is relative to the tree's root, slash-separated.
	Path string
	// Mode is the file's permission bits.
	Mode fs.FileMode
	// Kinds lists the kinds of secret it holds, each once.
	Kinds []Kind
}

// Exposed returns the files with findings whose permission bits are wider
// than 0600. It is empty for a Report from RedactTree, whose files no
// longer hold their secrets.
func (r Report) Exposed() []ExposedFile {
	var out []ExposedFile
	for _, f := range r.Findings {
		mode, ok := r.modes[f.Path]
		if !ok || mode&^0o600 == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Path == f.Path {
			if !slices.Contains(out[n-1].Kinds, f.Kind) {
				out[n-1].Kinds = append(out[n-1].Kinds, f.Kind)
			}
			continue
		}
		out = append(out, ExposedFile{Path: f.Path, Mode: mode, Kinds: []Kind{f.Kind}})
	}
	return out
}

// ScanTree reads every regular file under root (or root itself, when it is
// a file) and reports the secrets found, changing nothing. Files are read
// concurrently, each as a stream. Errors are collected, one per file that
// could not be read, and returned joined with the report of the rest.
func ScanTree(root string) (Report, error) {
	return walk(root, false)
}

// RedactTree rewrites, in place, every regular file under root (or root
// itself, when it is a file) that holds a secret, with the secrets
// replaced as Redact does. A file is rewritten through a temporary file in
// its folder renamed over it, with the same permission bits; a file
// without secrets is not touched. Hard links to a rewritten file keep the
// old content. Errors are collected as ScanTree does.
func RedactTree(root string) (Report, error) {
	rep, err := walk(root, true)
	rep.modes = nil
	return rep, err
}

// FindExposed scans root as ScanTree does and returns the files that hold
// key material but whose permission bits are wider than 0600: for the
// files the harness keeps on purpose (a kubeconfig kept with skip-cleanup).
func FindExposed(root string) ([]ExposedFile, error) {
	rep, err := ScanTree(root)
	return rep.Exposed(), err
}

// fileResult is what one file gave.
type fileResult struct {
	size     int64
	mode     fs.FileMode
	binary   bool
	redacted bool
	findings []Finding
	err      error
}

func walk(root string, redact bool) (Report, error) {
	var rep Report
	verb := "scan"
	if redact {
		verb = "redact"
	}
	dir, names, err := listFiles(root, &rep)
	if err != nil {
		return rep, fmt.Errorf("%s %q: %w", verb, root, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return rep, fmt.Errorf("%s %q: %w", verb, root, err)
	}
	defer r.Close()

	results := make([]fileResult, len(names))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(runtime.GOMAXPROCS(0), 4, max(len(names), 1)) {
		wg.Go(func() {
			for i := range work {
				results[i] = doFile(r, names[i], redact)
			}
		})
	}
	for i := range names {
		work <- i
	}
	close(work)
	wg.Wait()

	var errs []error
	rep.modes = make(map[string]fs.FileMode)
	for i, res := range results {
		name := names[i]
		if res.err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", verb, filepath.Join(dir, filepath.FromSlash(name)), res.err))
		}
		if res.binary {
			rep.Binary = append(rep.Binary, name)
			continue
		}
		rep.Files++
		rep.Bytes += res.size
		if res.redacted {
			rep.Redacted = append(rep.Redacted, name)
		}
		if len(res.findings) > 0 {
			rep.modes[name] = res.mode
		}
		for _, f := range res.findings {
			f.Path = name
			rep.Findings = append(rep.Findings, f)
		}
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
	return rep, errors.Join(errs...)
}

// listFiles returns the folder to open as an os.Root and the regular files
// in it, slash-separated and sorted, noting in rep what it skips. A root
// that is a file gives its folder and its name.
func listFiles(root string, rep *Report) (string, []string, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return "", nil, err
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			rep.Skipped = append(rep.Skipped, filepath.Base(root))
			return filepath.Dir(root), nil, nil
		}
		return filepath.Dir(root), []string{filepath.Base(root)}, nil
	}
	var names []string
	var errs []error
	err = fs.WalkDir(os.DirFS(root), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			if d != nil && d.IsDir() && name != "." {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
		case d.Type().IsRegular():
			names = append(names, name)
		default:
			rep.Skipped = append(rep.Skipped, name)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return root, names, errors.Join(errs...)
}

// openFile opens a file to scan; a variable so that tests running as root,
// who can read anything, can make a file fail.
var openFile = (*os.Root).Open

// doFile scans, and when asked and needed redacts, one file. It reads the
// file twice when it rewrites it, so that the common case, a file without
// secrets, is only read.
func doFile(r *os.Root, name string, redact bool) fileResult {
	var res fileResult
	f, err := openFile(r, name)
	if err != nil {
		res.err = err
		return res
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		res.err = err
		return res
	}
	if !fi.Mode().IsRegular() {
		// Replaced by something else since the walk.
		res.err = fmt.Errorf("not a regular file any more")
		return res
	}
	res.size, res.mode = fi.Size(), fi.Mode().Perm()
	res.findings, res.binary, res.err = scan(f)
	if !redact || res.err != nil || len(res.findings) == 0 {
		return res
	}
	if _, err := f.Seek(0, 0); err != nil {
		res.err = err
		return res
	}
	res.findings, res.err = rewrite(r, name, f, fi.Mode())
	res.redacted = res.err == nil
	return res
}

// rewrite writes a redacted copy of src next to name and renames it over
// name, keeping mode's permission, setuid, setgid and sticky bits.
func rewrite(r *os.Root, name string, src *os.File, mode fs.FileMode) ([]Finding, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read does not fail on Linux (Go 1.24+: it panics instead)
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".redact-"+hex.EncodeToString(rnd[:]))
	dst, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	found, err := redactTo(dst, src)
	if err == nil {
		// The umask may have narrowed the mode given to OpenFile; the
		// descriptor-based chmod cannot be raced onto another file.
		err = dst.Chmod(mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		_ = r.Remove(tmp) // the error returned is the write's; a temporary file left is hidden and redacted
		return nil, err
	}
	return found, nil
}
