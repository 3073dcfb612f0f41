// Package snapshot records the state of every container a provider made for
// a cluster — name, image, state, exit code, OOM kill, restarts, addresses,
// published ports and labels — into an artifacts folder, as a table a person
// reads first when a machine never came up, and as JSON for tools.
//
// It only reads: it must not change, start, stop or remove a container, and
// it talks to the engine only through Engine, which only reads.
package snapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Filter selects the containers of a snapshot. Every field that is set must
// match; at least one must be set, so that a snapshot never sweeps up the
// whole engine by mistake.
type Filter struct {
	// Cluster selects containers labelled io.x-k8s.kind.cluster=Cluster,
	// which CAPD puts on every machine and load-balancer container. If
	// empty, the label is not required.
	Cluster string
	// NamePrefix selects containers whose name starts with it, e.g.
	// "<cluster>-". If empty, any name.
	NamePrefix string
	// Labels must all be present; an empty value matches any value. If nil,
	// no other label is required.
	Labels map[string]string
}

// Container is the state of one container at the time of the snapshot.
type Container struct {
	// Name is the container's name, without the engine's leading slash.
	Name string `json:"name"`
	// ID is the engine's container ID.
	ID string `json:"id"`
	// Image is the image reference the container was created from.
	Image string `json:"image"`
	// Role is the io.x-k8s.kind.role label: control-plane, worker or
	// external-load-balancer; empty if unset.
	Role string `json:"role,omitempty"`
	// State is created, running, paused, restarting, removing, exited or
	// dead.
	State string `json:"state"`
	// Running is true while the main process runs.
	Running bool `json:"running"`
	// ExitCode is the main process's last exit code; 0 until it exited.
	ExitCode int `json:"exitCode"`
	// OOMKilled is true when the kernel killed it for lack of memory.
	OOMKilled bool `json:"oomKilled"`
	// Error is the engine's error for the container, e.g. why it could not
	// start.
	Error string `json:"error,omitempty"`
	// Restarts is how often the engine restarted it.
	Restarts int `json:"restarts"`
	// Created, StartedAt and FinishedAt are the engine's timestamps; the
	// last two are zero if it never started or never finished.
	Created    time.Time `json:"created"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Networks maps each attached network to the container's addresses on
	// it. The engine forgets them once a container stops.
	Networks map[string]runtime.NetworkEndpoint `json:"networks,omitempty"`
	// Ports lists the published ports (also empty once stopped).
	Ports []runtime.PortBinding `json:"ports,omitempty"`
	// Labels are all the container's labels.
	Labels map[string]string `json:"labels,omitempty"`
}

// Snapshot is the state of a set of containers at one moment.
type Snapshot struct {
	// TakenAt is when the listing was made.
	TakenAt time.Time `json:"takenAt"`
	// Filter is what selected the containers.
	Filter Filter `json:"filter"`
	// Containers are sorted by name.
	Containers []Container `json:"containers"`
	// Errors lists containers that were listed but could not be inspected
	// (for example removed in between), one message each.
	Errors []string `json:"errors,omitempty"`
}

// DefaultTimeout bounds Take when ctx has no earlier deadline.
const DefaultTimeout = 30 * time.Second

// Engine is what Take needs of the container engine.
type Engine interface {
	ListContainers(ctx context.Context, f runtime.Filter) ([]runtime.Container, error)
	InspectContainer(ctx context.Context, nameOrID string) (runtime.ContainerDetails, error)
}

var _ Engine = runtime.Containers(nil)

// Take lists the containers selected by f and inspects each, concurrently.
// A container that cannot be inspected is recorded in Snapshot.Errors and
// the error is returned too, along with everything else that was found; an
// error from the listing itself gives an empty Snapshot.
func Take(ctx context.Context, r Engine, f Filter) (Snapshot, error) {
	s := Snapshot{TakenAt: time.Now().UTC(), Filter: f}
	if r == nil {
		return s, errors.New("snapshot: nil runtime")
	}
	if f.Cluster == "" && f.NamePrefix == "" && len(f.Labels) == 0 {
		return s, errors.New("snapshot: empty filter: set Cluster, NamePrefix or Labels")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()

	rf := runtime.Filter{Labels: maps.Clone(f.Labels)}
	if f.Cluster != "" {
		if rf.Labels == nil {
			rf.Labels = map[string]string{}
		}
		rf.Labels[runtime.LabelCluster] = f.Cluster
	}
	if f.NamePrefix != "" {
		rf.Name = "^/?" + regexp.QuoteMeta(f.NamePrefix)
	}
	list, err := r.ListContainers(ctx, rf)
	if err != nil {
		return s, fmt.Errorf("snapshot %s: %w", f, err)
	}
	// The engine's name filter is a pattern match; keep only true prefixes.
	list = slices.DeleteFunc(list, func(c runtime.Container) bool {
		return !strings.HasPrefix(c.Name, f.NamePrefix)
	})

	out := make([]*Container, len(list))
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, c := range list {
		wg.Go(func() {
			d, err := r.InspectContainer(ctx, c.ID)
			if err != nil {
				errs[i] = fmt.Errorf("inspect container %q: %w", c.Name, err)
				return
			}
			out[i] = fromDetails(d)
		})
	}
	wg.Wait()
	for i := range list {
		if errs[i] != nil {
			s.Errors = append(s.Errors, errs[i].Error())
		} else {
			s.Containers = append(s.Containers, *out[i])
		}
	}
	slices.SortFunc(s.Containers, func(a, b Container) int { return cmp.Compare(a.Name, b.Name) })
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("snapshot %s: %w", f, err)
	}
	return s, nil
}

func fromDetails(d runtime.ContainerDetails) *Container {
	return &Container{
		Name:       strings.TrimPrefix(d.Name, "/"),
		ID:         d.ID,
		Image:      d.Image,
		Role:       d.Labels[runtime.LabelRole],
		State:      d.State.Status,
		Running:    d.State.Running,
		ExitCode:   d.State.ExitCode,
		OOMKilled:  d.State.OOMKilled,
		Error:      d.State.Error,
		Restarts:   d.RestartCount,
		Created:    d.Created,
		StartedAt:  d.State.StartedAt,
		FinishedAt: d.State.FinishedAt,
		Networks:   maps.Clone(d.Networks),
		Ports:      slices.Clone(d.Ports),
		Labels:     maps.Clone(d.Labels),
	}
}

// String describes the filter, e.g. `cluster "c1", name prefix "c1-"`.
func (f Filter) String() string {
	var parts []string
	if f.Cluster != "" {
		parts = append(parts, fmt.Sprintf("cluster %q", f.Cluster))
	}
	if f.NamePrefix != "" {
		parts = append(parts, fmt.Sprintf("name prefix %q", f.NamePrefix))
	}
	for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
		parts = append(parts, fmt.Sprintf("label %s=%s", k, f.Labels[k]))
	}
	if len(parts) == 0 {
		return "all containers"
	}
	return strings.Join(parts, ", ")
}
