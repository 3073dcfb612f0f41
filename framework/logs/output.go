package logs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Where a step's output goes: a file created on its first byte, and the
// tail of a stream kept for an error message.

var errClosed = errors.New("output closed: the step was abandoned")

// lazyFile creates its file on the first write, so that a command that
// failed before printing anything leaves no empty file behind. It is safe
// for concurrent use, and drops writes after close, which matters only when
// a step was abandoned and its engine call still writes.
type lazyFile struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	err    error
	closed bool
	n      int64 // bytes written
}

func (w *lazyFile) open() error {
	if w.f == nil && w.err == nil {
		if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
			w.err = err
		} else {
			w.f, w.err = os.Create(w.path)
		}
	}
	return w.err
}

func (w *lazyFile) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := w.open(); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

// close closes the file; with create, it first creates it empty if nothing
// was written.
func (w *lazyFile) close(create bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if create {
		if err := w.open(); err != nil {
			return err
		}
	}
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

// reclaim removes the closed file and returns its content if it holds at
// most max bytes; a larger file is left alone and reclaim returns "".
func (w *lazyFile) reclaim(max int64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil || w.n > max {
		return ""
	}
	b, err := os.ReadFile(w.path)
	if err != nil || os.Remove(w.path) != nil {
		return ""
	}
	return string(b)
}

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

var _ io.Writer = (*tailBuffer)(nil)

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
