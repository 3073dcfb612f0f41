package leak

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Unmarked is a run id whose labelled objects are in the engine without
// any marker of the run: what a test that labels its objects but tracks
// no cluster (the integration tests, the image factory's build
// containers) left when it was killed, or what a run's own teardown left
// after it removed its markers.
type Unmarked struct {
	// ID is the run id.
	ID string
	// Owners are the objects' runtime.LabelOwner values ("" for an object
	// without one).
	Owners []string
	// Objects is how many containers, networks and volumes carry the id.
	Objects int
}

// Gone reports whether every owner of the objects is a process of this
// host that is gone: only then is the run known to be dead. An object
// without an owner, or one of another host, keeps the run (make clean-e2e
// removes it when named).
func (u Unmarked) Gone() bool {
	if len(u.Owners) == 0 {
		return false
	}
	for _, o := range u.Owners {
		if alive, known := runtime.OwnerState(o); alive || !known {
			return false
		}
	}
	return true
}

// State says Gone in words, for a listing.
func (u Unmarked) State() string {
	var states []string
	for _, o := range u.Owners {
		switch alive, known := runtime.OwnerState(o); {
		case o == "":
			states = append(states, "no owner label")
		case !known:
			states = append(states, o+" (cannot tell)")
		case alive:
			states = append(states, o+" (alive)")
		default:
			states = append(states, o+" (gone)")
		}
	}
	return strings.Join(states, ", ")
}

// UnmarkedRuns lists the run ids of labelled objects that no marker
// names, sorted.
func UnmarkedRuns(ctx context.Context, rt Lister) ([]Unmarked, error) {
	runs, err := Runs(ctx, rt)
	if err != nil {
		return nil, err
	}
	marked := map[string]bool{}
	for _, r := range runs {
		marked[r.ID] = true
	}
	byID := map[string]*Unmarked{}
	add := func(labels map[string]string) {
		id := labels[runtime.LabelRunID]
		if id == "" || marked[id] || labels[runtime.LabelCreatedBy] == markerComponent {
			return
		}
		u := byID[id]
		if u == nil {
			u = &Unmarked{ID: id}
			byID[id] = u
		}
		u.Objects++
		if o := labels[runtime.LabelOwner]; !slices.Contains(u.Owners, o) {
			u.Owners = append(u.Owners, o)
		}
	}
	f := runtime.Filter{Labels: map[string]string{runtime.LabelRunID: ""}}
	cs, err := rt.ListContainers(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list labelled containers: %w", err)
	}
	for _, c := range cs {
		add(c.Labels)
	}
	ns, err := rt.ListNetworks(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list labelled networks: %w", err)
	}
	for _, n := range ns {
		add(n.Labels)
	}
	vs, err := rt.ListVolumes(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list labelled volumes: %w", err)
	}
	for _, v := range vs {
		add(v.Labels)
	}
	out := make([]Unmarked, 0, len(byID))
	for _, u := range byID {
		slices.Sort(u.Owners)
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Unmarked) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
