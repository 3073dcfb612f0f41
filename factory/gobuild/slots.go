package gobuild

import (
	"context"
	"fmt"
)

// Slots bounds how many go commands compile at once, across builders and
// steps: one `go build` already runs as many compilers as there are CPUs,
// so two at once on a 2-CPU machine only contend (1.20 times the wall time
// and 1.24 times the CPU of the same two builds one after the other,
// make bench-gobuild). A build holds a slot only while the go
// command compiles and links, not while it downloads modules or while its
// image is assembled and loaded: in those minutes another build compiles.
// A nil *Slots bounds nothing.
type Slots struct{ ch chan struct{} }

// NewSlots returns Slots for n go commands at once (at least one).
func NewSlots(n int) *Slots { return &Slots{ch: make(chan struct{}, max(n, 1))} }

// Hold runs f holding a slot, waiting for one until ctx ends.
func (s *Slots) Hold(ctx context.Context, f func() error) error {
	if s == nil {
		return f()
	}
	select {
	case s.ch <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for a compile slot: %w", ctx.Err())
	}
	defer func() { <-s.ch }()
	return f()
}
