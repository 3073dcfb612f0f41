package secrets

import (
	"bytes"
	"io"
)

// Scan returns the secrets in data, in order. Binary data (a NUL byte in
// its first 8000 bytes) has none.
func Scan(data []byte) []Finding {
	fs, _, _ := scan(bytes.NewReader(data))
	return fs
}

// Redact returns data with its secrets replaced, and what was replaced.
// When nothing is found it returns data itself and nil; binary data is
// returned as it is.
func Redact(data []byte) ([]byte, []Finding) {
	var out bytes.Buffer
	out.Grow(len(data))
	e := newEngine(&out)
	if _, err := e.run(bytes.NewReader(data)); err != nil {
		// Neither a bytes.Reader nor a bytes.Buffer fails.
		panic(err)
	}
	if len(e.found) == 0 {
		return data, nil
	}
	return out.Bytes(), findings(e.found)
}

// scan reads r to its end and returns its findings and whether it looked
// binary.
func scan(r io.Reader) ([]Finding, bool, error) {
	e := newEngine(nil)
	binary, err := e.run(r)
	return findings(e.found), binary, err
}

// redactTo copies r to w with secrets replaced.
func redactTo(w io.Writer, r io.Reader) ([]Finding, error) {
	e := newEngine(w)
	_, err := e.run(r)
	return findings(e.found), err
}

func findings(fs []*Finding) []Finding {
	if len(fs) == 0 {
		return nil
	}
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = *f
	}
	return out
}
