package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// RemoveRunOnCleanup registers a t.Cleanup that removes every container,
// network and volume labelled with runID (runtime.RunLabels), containers
// first (a network in use cannot go), and reports each removal that fails.
// It is for tests whose objects are not under test once the test ends;
// tests of a leak check use the leak check instead.
func RemoveRunOnCleanup(t testing.TB, rt runtime.Runtime, runID string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := RemoveRun(ctx, rt, runID); err != nil {
			t.Errorf("cleanup of run %s: %v", runID, err)
		}
	})
}

// RemoveRun removes every container, network and volume labelled with
// runID, containers first, and returns every failure.
func RemoveRun(ctx context.Context, rt runtime.Runtime, runID string) error {
	f := runtime.Filter{Labels: map[string]string{runtime.LabelRunID: runID}}
	var errs []error
	containers, err := rt.ListContainers(ctx, f)
	errs = append(errs, err)
	for _, c := range containers {
		if err := rt.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("remove container %q: %w", c.Name, err))
		}
	}
	networks, err := rt.ListNetworks(ctx, f)
	errs = append(errs, err)
	for _, n := range networks {
		if err := rt.RemoveNetwork(ctx, n.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("remove network %q: %w", n.Name, err))
		}
	}
	volumes, err := rt.ListVolumes(ctx, f)
	errs = append(errs, err)
	for _, v := range volumes {
		if err := rt.RemoveVolume(ctx, v.Name); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("remove volume %q: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}
