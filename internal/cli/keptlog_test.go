package cli

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"
)

// fullDisk takes n bytes, then fails as a full file system does.
type fullDisk struct {
	n   int
	got bytes.Buffer
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if d.got.Len()+len(p) > d.n {
		return 0, syscall.ENOSPC
	}
	return d.got.Write(p)
}

// A stage's log on a full disk stops, said once; the stage's output still
// reaches the other writers whole, so its process keeps its stdout.
func TestKeptLogOnAFullDisk(t *testing.T) {
	disk := &fullDisk{n: 10}
	var failures []error
	var out bytes.Buffer
	w := io.MultiWriter(&out, &keptLog{f: disk, failed: func(err error) { failures = append(failures, err) }})
	for _, line := range []string{"first\n", "second line\n", "third\n"} {
		if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
			t.Fatalf("write %q: %d, %v", line, n, err)
		}
	}
	if out.String() != "first\nsecond line\nthird\n" {
		t.Errorf("the output: %q", out.String())
	}
	if disk.got.String() != "first\n" {
		t.Errorf("the log: %q, want what fitted", disk.got.String())
	}
	if len(failures) != 1 || !errors.Is(failures[0], syscall.ENOSPC) {
		t.Errorf("failures: %v, want one ENOSPC", failures)
	}
}
