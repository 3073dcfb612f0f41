// Package leak finds containers, networks and volumes that a harness run, or
// a workload cluster, left behind in the container engine.
//
// Objects are attributed by label only: the harness labels everything it
// creates with runtime.LabelRunID, and CAPD and kind label every node and
// load balancer container with the cluster name (runtime.LabelCluster). No
// external state is needed, so a check works after a crash too. Check only
// reads; Remove deletes what a report lists and nothing else.
package leak

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Selector says whose objects to look for. At least one field must be set.
type Selector struct {
	// RunID selects objects labelled with runtime.LabelRunID=RunID.
	RunID string
	// Cluster selects containers labelled runtime.LabelCluster=Cluster (CAPD
	// machines and load balancer, or kind nodes).
	Cluster string
}

func (s Selector) String() string {
	var parts []string
	if s.RunID != "" {
		parts = append(parts, "run "+s.RunID)
	}
	if s.Cluster != "" {
		parts = append(parts, "cluster "+s.Cluster)
	}
	return strings.Join(parts, ", ")
}

// Report lists what is left.
type Report struct {
	Selector   Selector
	Containers []runtime.Container
	Networks   []runtime.Network
	Volumes    []runtime.Volume
}

// Empty reports whether nothing was left behind.
func (r Report) Empty() bool {
	return len(r.Containers) == 0 && len(r.Networks) == 0 && len(r.Volumes) == 0
}

// String lists the leftovers one per line, or says there are none.
func (r Report) String() string {
	if r.Empty() {
		return fmt.Sprintf("no leftovers for %s", r.Selector)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "leftovers for %s:", r.Selector)
	for _, c := range r.Containers {
		fmt.Fprintf(&b, "\n  container %s (%s, image %s)", c.Name, c.State, c.Image)
	}
	for _, n := range r.Networks {
		fmt.Fprintf(&b, "\n  network %s", n.Name)
	}
	for _, v := range r.Volumes {
		fmt.Fprintf(&b, "\n  volume %s", v.Name)
	}
	return b.String()
}

// Err returns nil when the report is empty and an error listing the
// leftovers otherwise, for use in a test assertion.
func (r Report) Err() error {
	if r.Empty() {
		return nil
	}
	return errors.New(r.String())
}

// Check lists the objects that sel selects.
func Check(ctx context.Context, rt runtime.Runtime, sel Selector) (Report, error) {
	if sel.RunID == "" && sel.Cluster == "" {
		return Report{}, errors.New("leak check: selector has neither a run id nor a cluster name")
	}
	rep := Report{Selector: sel}
	seen := map[string]bool{}
	var filters []runtime.Filter
	if sel.RunID != "" {
		filters = append(filters, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: sel.RunID}})
	}
	if sel.Cluster != "" {
		filters = append(filters, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: sel.Cluster}})
	}
	for _, f := range filters {
		cs, err := rt.ListContainers(ctx, f)
		if err != nil {
			return rep, fmt.Errorf("leak check for %s: %w", sel, err)
		}
		for _, c := range cs {
			if !seen[c.ID] {
				seen[c.ID] = true
				rep.Containers = append(rep.Containers, c)
			}
		}
	}
	if sel.RunID != "" {
		f := filters[0]
		nets, err := rt.ListNetworks(ctx, f)
		if err != nil {
			return rep, fmt.Errorf("leak check for %s: %w", sel, err)
		}
		rep.Networks = nets
		vols, err := rt.ListVolumes(ctx, f)
		if err != nil {
			return rep, fmt.Errorf("leak check for %s: %w", sel, err)
		}
		rep.Volumes = vols
	}
	return rep, nil
}

// Remove deletes everything the report lists: containers first (with their
// anonymous volumes), then networks, then volumes. It tries every object
// and returns all the errors it met.
func Remove(ctx context.Context, rt runtime.Runtime, rep Report) error {
	var errs []error
	for _, c := range rep.Containers {
		errs = append(errs, rt.RemoveContainer(ctx, c.ID))
	}
	for _, n := range rep.Networks {
		errs = append(errs, rt.RemoveNetwork(ctx, n.ID))
	}
	for _, v := range rep.Volumes {
		errs = append(errs, rt.RemoveVolume(ctx, v.Name))
	}
	return errors.Join(errs...)
}
