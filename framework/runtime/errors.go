package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors that implementations wrap so callers can classify failures
// with errors.Is without importing an engine's error package.
var (
	// ErrNotFound: the container, image, network or volume does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the object exists already or is in a state that forbids
	// the operation (e.g. exec in a stopped container).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the engine could not be reached.
	ErrUnavailable = errors.New("engine unavailable")
)

// ExitError reports a command that ran but exited non-zero. It carries the
// tail of the command's standard error so that the message says why.
type ExitError struct {
	Container string
	Cmd       []string
	ExitCode  int
	Stderr    []byte
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("command %q in container %q exited with code %d", strings.Join(e.Cmd, " "), e.Container, e.ExitCode)
	if s := strings.TrimSpace(string(tail(e.Stderr, 2048))); s != "" {
		msg += ": " + s
	}
	return msg
}

func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

// Execer runs commands in containers: the part of Containers that Output
// needs.
type Execer interface {
	Exec(ctx context.Context, nameOrID string, opts ExecOptions) (ExecResult, error)
}

// Output runs cmd in the container through r and returns its standard
// output. A non-zero exit code gives an *ExitError that holds the standard
// error; other failures are returned as Exec returned them.
func Output(ctx context.Context, r Execer, container string, cmd ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	res, err := r.Exec(ctx, container, ExecOptions{Cmd: cmd, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.Bytes(), err
	}
	if res.ExitCode != 0 {
		return stdout.Bytes(), &ExitError{Container: container, Cmd: cmd, ExitCode: res.ExitCode, Stderr: stderr.Bytes()}
	}
	return stdout.Bytes(), nil
}
