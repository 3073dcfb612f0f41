package gobuild

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSlotsBoundConcurrency(t *testing.T) {
	s := NewSlots(2)
	var now, peak atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Hold(context.Background(), func() error {
				n := now.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(10 * time.Millisecond)
				now.Add(-1)
				return nil
			})
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, want 2", p)
	}
}

func TestSlotsWaitEndsWithContext(t *testing.T) {
	s := NewSlots(1)
	hold := make(chan struct{})
	go func() { _ = s.Hold(context.Background(), func() error { <-hold; return nil }) }()
	// Wait until the slot is taken.
	for len(s.ch) == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ran := false
	err := s.Hold(ctx, func() error { ran = true; return nil })
	close(hold)
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Errorf("Hold on a full Slots with an ending context: err %v, ran %t", err, ran)
	}
}

func TestNilSlotsBoundNothing(t *testing.T) {
	var s *Slots
	want := errors.New("f's error")
	if err := s.Hold(context.Background(), func() error { return want }); err != want {
		t.Errorf("Hold = %v, want f's error", err)
	}
}
