// Package waitfor waits for the state of Kubernetes objects the way a
// controller learns of it: from a watch. A wait evaluates its condition at
// once, then again whenever the watched objects change, so it ends when the
// state is reached rather than at the next tick of a poll; a resync period
// re-evaluates it anyway, in case a watch stalls. Every wait is bounded by
// its timeout (the e2e config's interval) and by its context: when the
// context ends (a spec timeout, an interrupt) the wait returns at once,
// and nothing keeps polling behind the cleanup.
//
// This package must not assert (no Gomega): it returns errors that say
// what was last seen, and the specs decide.
package waitfor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Condition reports whether the wait is over and, if not, what is still
// missing (for the error on timeout). An error from reading objects is not
// fatal: it is reported as the status and the wait goes on.
type Condition func(ctx context.Context) (done bool, status string)

// Wait is one wait.
type Wait struct {
	// Client watches Watched. Required.
	Client client.WithWatch
	// Watched is an empty list of the kind whose changes trigger an
	// evaluation, e.g. &clusterv1.MachineList{}. Required.
	Watched client.ObjectList
	// ListOptions select the watched objects (namespace, labels).
	ListOptions []client.ListOption
	// Timeout bounds the wait. Required.
	Timeout time.Duration
	// Resync re-evaluates the condition this often without an event; if
	// zero, Timeout/10.
	Resync time.Duration
	// What names the wait in errors, e.g. "control plane of cluster x".
	What string
	// OnStatus, if set, is called with every new status the condition
	// reports (for progress logs).
	OnStatus func(status string)
}

// ErrTimeout is wrapped by the error of a wait that ran out of time.
var ErrTimeout = errors.New("timed out")

// Until waits until cond is true. It returns nil, an error wrapping
// ErrTimeout (with the last status) when w.Timeout passes, or an error
// wrapping ctx.Err() when ctx ends first.
func (w Wait) Until(ctx context.Context, cond Condition) error {
	if w.Client == nil || w.Watched == nil || w.Timeout <= 0 {
		return fmt.Errorf("wait for %s: Client, Watched and Timeout are required", w.What)
	}
	resync := w.Resync
	if resync <= 0 {
		resync = w.Timeout / 10
	}
	wctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()

	last := ""
	check := func() bool {
		done, status := cond(wctx)
		if status != last {
			last = status
			if w.OnStatus != nil && status != "" {
				w.OnStatus(status)
			}
		}
		return done
	}
	if check() {
		return nil
	}
	ticker := time.NewTicker(resync)
	defer ticker.Stop()
	var events <-chan watch.Event
	var watcher watch.Interface
	stop := func() {
		if watcher != nil {
			watcher.Stop()
			watcher, events = nil, nil
		}
	}
	defer stop()
	start := func() {
		// A failed watch is retried at the next resync.
		if wi, err := w.Client.Watch(wctx, w.Watched.DeepCopyObject().(client.ObjectList), w.ListOptions...); err == nil {
			watcher, events = wi, wi.ResultChan()
		}
	}
	start()
	// A change between the first check and the watch's start is caught
	// by checking once more now that the watch is open.
	if check() {
		return nil
	}
	for {
		select {
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				// A context ended with a cause (a spec's timeout) says why.
				if cause := context.Cause(ctx); cause != nil && cause != err {
					return fmt.Errorf("wait for %s: %w: %v (last seen: %s)", w.What, err, cause, last)
				}
				return fmt.Errorf("wait for %s: %w (last seen: %s)", w.What, err, last)
			}
			return fmt.Errorf("wait for %s: %w after %s (last seen: %s)", w.What, ErrTimeout, w.Timeout, last)
		case ev, ok := <-events:
			if !ok || ev.Type == watch.Error {
				stop()
				start()
			}
		case <-ticker.C:
			if watcher == nil {
				start()
			}
		}
		if check() {
			return nil
		}
	}
}
