// Package leak finds containers, networks and volumes that a harness run, or
// a workload cluster, left behind in the container engine.
//
// Objects are attributed by label only: the harness labels everything it
// creates with runtime.LabelRunID, and CAPD and kind label every node and
// load balancer container with the cluster name (runtime.LabelCluster),
// which a run's markers (Tracker) tie to the run. No state outside the
// engine is needed, so a check works after a crash too, and Reap cleans up
// after a run that was killed. Check only reads; Remove deletes what a
// report lists and nothing else.
package leak

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Selector says whose objects to look for. At least one field must be set.
type Selector struct {
	// RunID selects objects labelled with runtime.LabelRunID=RunID.
	RunID string
	// Cluster selects containers labelled runtime.LabelCluster=Cluster (CAPD
	// machines and load balancer, or kind nodes) or
	// LabelTrackedCluster=Cluster (the cloud controller manager's load
	// balancers).
	Cluster string
	// Clusters selects the containers of more clusters, as Cluster does.
	Clusters []string
}

func (s Selector) clusters() []string {
	out := slices.Clone(s.Clusters)
	if s.Cluster != "" {
		out = append(out, s.Cluster)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s Selector) String() string {
	var parts []string
	if s.RunID != "" {
		parts = append(parts, "run "+s.RunID)
	}
	if cs := s.clusters(); len(cs) > 0 {
		parts = append(parts, "cluster "+strings.Join(cs, ", "))
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

// Lister is what a leak check needs of the engine.
type Lister interface {
	ListContainers(ctx context.Context, f runtime.Filter) ([]runtime.Container, error)
	ListNetworks(ctx context.Context, f runtime.Filter) ([]runtime.Network, error)
	ListVolumes(ctx context.Context, f runtime.Filter) ([]runtime.Volume, error)
}

// Remover is what removing leftovers needs of the engine.
type Remover interface {
	RemoveContainer(ctx context.Context, nameOrID string) error
	RemoveNetwork(ctx context.Context, nameOrID string) error
	RemoveVolume(ctx context.Context, name string) error
}

// Engine is a Lister and a Remover: what finding and removing a dead run's
// leftovers needs.
type Engine interface {
	Lister
	Remover
}

var _ Engine = runtime.Runtime(nil)

// Check lists the objects that sel selects.
func Check(ctx context.Context, rt Lister, sel Selector) (Report, error) {
	if sel.RunID == "" && len(sel.clusters()) == 0 {
		return Report{}, errors.New("leak check: selector has neither a run id nor a cluster name")
	}
	rep := Report{Selector: sel}
	seen := map[string]bool{}
	var filters []runtime.Filter
	if sel.RunID != "" {
		filters = append(filters, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: sel.RunID}})
	}
	for _, c := range sel.clusters() {
		filters = append(filters,
			runtime.Filter{Labels: map[string]string{runtime.LabelCluster: c}},
			runtime.Filter{Labels: map[string]string{LabelTrackedCluster: c}})
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
		// A run's markers are its bookkeeping, removed by FinishRun or
		// Reap, not leftovers.
		rep.Volumes = slices.DeleteFunc(vols, func(v runtime.Volume) bool { return v.Labels[runtime.LabelCreatedBy] == markerComponent })
	}
	if cs := sel.clusters(); len(cs) > 0 {
		// kind's Podman provider gives each node a named volume for /var,
		// labelled "<node name>=true" (<cluster>-control-plane,
		// <cluster>-worker2, ...); its Docker provider uses anonymous
		// ones, removed with the node.
		vols, err := rt.ListVolumes(ctx, runtime.Filter{})
		if err != nil {
			return rep, fmt.Errorf("leak check for %s: %w", sel, err)
		}
		for _, v := range vols {
			if slices.ContainsFunc(cs, func(c string) bool { return isKindNodeVolume(v, c) }) &&
				!slices.ContainsFunc(rep.Volumes, func(o runtime.Volume) bool { return o.Name == v.Name }) {
				rep.Volumes = append(rep.Volumes, v)
			}
		}
	}
	return rep, nil
}

// isKindNodeVolume reports whether v is the /var volume kind's Podman
// provider made for a node of kind cluster c: labelled with the node's
// name, which kind makes "<cluster>-<role><n>" (control-plane or worker;
// n empty for the first, then 2, 3, ...). The name must match whole: a
// cluster "c-worker" has a node "c-worker-control-plane".
func isKindNodeVolume(v runtime.Volume, c string) bool {
	for k, val := range v.Labels {
		if rest, ok := strings.CutPrefix(k, c+"-"); ok && val == "true" && kindNodeRole.MatchString(rest) {
			return true
		}
	}
	return false
}

var kindNodeRole = regexp.MustCompile(`^(control-plane|worker)([2-9]|[1-9][0-9]+)?$`)

// Remove deletes everything the report lists: containers first (with their
// anonymous volumes), then networks, then volumes. It tries every object
// and returns all the errors it met.
func Remove(ctx context.Context, rt Remover, rep Report) error {
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
