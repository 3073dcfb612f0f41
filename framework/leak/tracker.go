package leak

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Labels of the run markers a Tracker writes.
const (
	// LabelOwner says which process owns a run (runtime.LabelOwner).
	LabelOwner = runtime.LabelOwner
	// LabelStarted is when the marker was written, in Unix seconds.
	LabelStarted = "e2e.capd.x-k8s.io/started"
	// LabelTrackedCluster names a cluster a run owns; the cloud
	// controller manager's load balancers carry it too.
	LabelTrackedCluster = names.LabelCluster
	// LabelKeep, on a marker, keeps the run under the name it holds
	// (Tracker.Keep).
	LabelKeep = "e2e.capd.x-k8s.io/keep"
	// markerComponent is runtime.LabelCreatedBy of a marker.
	markerComponent = "capd-e2e-run-marker"
)

// MaxForeignAge is how long the markers of a run owned by another host are
// taken as live: its owner cannot be checked from here. It is longer than
// the suite's default timeout (3h).
const MaxForeignAge = 6 * time.Hour

// Tracker records in the engine what a run owns, so that what the run
// leaves can be found, and removed, after the run is gone, even when it
// was killed outright: for each cluster the run creates (its kind
// management cluster, the workload clusters CAPD makes for it), a small
// labelled volume, the run's marker, names the cluster and the process
// that owns the run. CAPD's and kind's containers cannot carry the run's
// labels (neither lets the caller add container labels); the markers tie
// them to the run by their cluster label.
//
// Reaping by markers is written here rather than with testcontainers-go's
// Ryuk reaper because Ryuk needs an image no registry-less machine can
// pull and a container per run, and the run must survive its own process
// (the suite tears down after Ginkgo interrupts; a Ryuk session would end
// with the connection instead).
type Tracker struct {
	rt    Markers
	runID string
	owner string
}

// Markers is what a Tracker needs of the engine: its markers are volumes.
type Markers interface {
	CreateVolume(ctx context.Context, name string, labels map[string]string) error
	ListVolumes(ctx context.Context, f runtime.Filter) ([]runtime.Volume, error)
	RemoveVolume(ctx context.Context, name string) error
}

var _ Markers = runtime.Resources(nil)

// NewTracker returns the tracker of run runID, owned by this process.
func NewTracker(rt Markers, runID string) *Tracker {
	return &Tracker{rt: rt, runID: runID, owner: selfOwner()}
}

// NewTrackerFor returns the tracker of run runID on behalf of the process
// that owns the run (another Ginkgo process: the run lives as long as the
// process that set it up, which tears it down).
func NewTrackerFor(rt Markers, runID, owner string) *Tracker {
	return &Tracker{rt: rt, runID: runID, owner: owner}
}

// RunID returns the run's id.
func (t *Tracker) RunID() string { return t.runID }

// Owner returns the run's owner, as LabelOwner spells it.
func (t *Tracker) Owner() string { return t.owner }

var unsafeVolumeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// markerName is the marker volume of cluster in run runID.
func markerName(runID, cluster string) string {
	return "capd-e2e-" + runID + "-" + unsafeVolumeChars.ReplaceAllString(cluster, "_")
}

// Track records that the run owns cluster: its containers (labelled
// io.x-k8s.kind.cluster or e2e.capd.x-k8s.io/cluster with its name) are
// the run's. Call it before the cluster is created. Tracking a cluster
// twice is not an error.
func (t *Tracker) Track(ctx context.Context, cluster string) error {
	labels := runtime.RunLabels(t.runID, markerComponent, map[string]string{
		LabelOwner:          t.owner,
		LabelStarted:        strconv.FormatInt(time.Now().Unix(), 10),
		LabelTrackedCluster: cluster,
	})
	err := t.rt.CreateVolume(ctx, markerName(t.runID, cluster), labels)
	if err != nil && !errors.Is(err, runtime.ErrConflict) {
		return fmt.Errorf("track cluster %q of run %s: %w", cluster, t.runID, err)
	}
	return nil
}

// Keep marks the run as kept under name (a kept environment: make up, or a
// run with SKIP_RESOURCE_CLEANUP): Reap leaves it, whatever its owner's
// state, until it is named. name must be a valid volume name part.
func (t *Tracker) Keep(ctx context.Context, name string) error {
	if name == "" || unsafeVolumeChars.MatchString(name) {
		return fmt.Errorf("keep run %s: name %q: want letters, digits, '_', '.' or '-'", t.runID, name)
	}
	labels := runtime.RunLabels(t.runID, markerComponent, map[string]string{
		LabelOwner:   t.owner,
		LabelStarted: strconv.FormatInt(time.Now().Unix(), 10),
		LabelKeep:    name,
	})
	err := t.rt.CreateVolume(ctx, "capd-e2e-"+t.runID+"--keep", labels)
	if err != nil && !errors.Is(err, runtime.ErrConflict) {
		return fmt.Errorf("keep run %s as %q: %w", t.runID, name, err)
	}
	return nil
}

// Run is a run known from its markers.
type Run struct {
	// ID is the run id.
	ID string
	// Owner is the owning process ("<host>/<pid>/<start>").
	Owner string
	// Started is when its first marker was written.
	Started time.Time
	// Clusters are the clusters it tracked.
	Clusters []string
	// Markers are its marker volumes.
	Markers []string
	// Kept is the name the run is kept under (Tracker.Keep), "" if it is
	// not kept: a kept run is never reaped unless named.
	Kept string
}

// Alive reports whether the run's owner still runs: a process of this
// host is checked by pid and start time; one of another host is taken as
// alive for MaxForeignAge.
func (r Run) Alive() bool {
	alive, known := runtime.OwnerState(r.Owner)
	if !known {
		return time.Since(r.Started) < MaxForeignAge
	}
	return alive
}

// Runs lists the runs that have markers in the engine, by id.
func Runs(ctx context.Context, rt Lister) ([]Run, error) {
	vols, err := rt.ListVolumes(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCreatedBy: markerComponent}})
	if err != nil {
		return nil, fmt.Errorf("list run markers: %w", err)
	}
	byID := map[string]*Run{}
	var ids []string
	for _, v := range vols {
		id := v.Labels[runtime.LabelRunID]
		r := byID[id]
		if r == nil {
			r = &Run{ID: id, Owner: v.Labels[LabelOwner]}
			byID[id] = r
			ids = append(ids, id)
		}
		if s, err := strconv.ParseInt(v.Labels[LabelStarted], 10, 64); err == nil {
			if t := time.Unix(s, 0); r.Started.IsZero() || t.Before(r.Started) {
				r.Started = t
			}
		}
		if c := v.Labels[LabelTrackedCluster]; c != "" {
			r.Clusters = append(r.Clusters, c)
		}
		if k := v.Labels[LabelKeep]; k != "" {
			r.Kept = k
		}
		r.Markers = append(r.Markers, v.Name)
	}
	slices.Sort(ids)
	out := make([]Run, 0, len(ids))
	for _, id := range ids {
		r := byID[id]
		slices.Sort(r.Clusters)
		out = append(out, *r)
	}
	return out, nil
}

// CheckRun lists what run runID left: its labelled containers, networks
// and volumes (its markers aside), and the containers of every cluster it
// tracked.
func CheckRun(ctx context.Context, rt Lister, runID string) (Report, error) {
	runs, err := Runs(ctx, rt)
	if err != nil {
		return Report{Selector: Selector{RunID: runID}}, err
	}
	var clusters []string
	for _, r := range runs {
		if r.ID == runID {
			clusters = r.Clusters
		}
	}
	return Check(ctx, rt, Selector{RunID: runID, Clusters: clusters})
}

// FinishRun removes run runID's markers once CheckRun found it clean;
// with leftovers, they stay, so that Reap can finish the job later.
func FinishRun(ctx context.Context, rt Engine, runID string) error {
	rep, err := CheckRun(ctx, rt, runID)
	if err != nil {
		return err
	}
	if !rep.Empty() {
		return rep.Err()
	}
	return removeMarkers(ctx, rt, runID)
}

// ClearRun ends run runID in the engine: it removes what the run left
// (its labelled objects and the containers of every cluster it tracked),
// then the run's markers, and returns what it left. Teardown, the suite's
// watcher and `capd-e2e run`'s leak check end a run with it.
func ClearRun(ctx context.Context, rt Engine, runID string) (Report, error) {
	left, err := CheckRun(ctx, rt, runID)
	if err != nil {
		return Report{}, fmt.Errorf("the leak check: %w", err)
	}
	if !left.Empty() {
		if err := Remove(ctx, rt, left); err != nil {
			return left, fmt.Errorf("removing what the run left (`make clean-e2e` removes it later): %w", err)
		}
	}
	return left, FinishRun(ctx, rt, runID)
}

func removeMarkers(ctx context.Context, rt Engine, runID string) error {
	vols, err := rt.ListVolumes(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCreatedBy: markerComponent, runtime.LabelRunID: runID}})
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vols {
		errs = append(errs, rt.RemoveVolume(ctx, v.Name))
	}
	return errors.Join(errs...)
}

// Reaped is what Reap did with one run: Report is what it found, all of
// it removed, as far as the engine's listing confirms, unless Err says
// what was not.
type Reaped struct {
	Run    Run
	Report Report
	Err    error
}

// Reap removes everything of the runs whose owner is gone (see
// Run.Alive) and that are not kept (Tracker.Keep), and of the runs in ids
// (a run id, or the name a kept run was kept under) whatever their
// owner's state, and their markers; then the objects of unmarked runs
// (UnmarkedRuns) whose owners are all gone, or that ids names. Runs of
// live owners and kept runs are never touched unless named.
func Reap(ctx context.Context, rt Engine, ids ...string) ([]Reaped, error) {
	runs, err := Runs(ctx, rt)
	if err != nil {
		return nil, err
	}
	var out []Reaped
	for _, r := range runs {
		named := slices.Contains(ids, r.ID) || (r.Kept != "" && slices.Contains(ids, r.Kept))
		if !named && (r.Alive() || r.Kept != "") {
			continue
		}
		rep, err := checkAndRemove(ctx, rt, Selector{RunID: r.ID, Clusters: r.Clusters})
		if err == nil {
			err = removeMarkers(ctx, rt, r.ID)
		}
		out = append(out, Reaped{Run: r, Report: rep, Err: err})
	}
	unmarked, err := UnmarkedRuns(ctx, rt)
	if err != nil {
		return out, err
	}
	for _, u := range unmarked {
		if !slices.Contains(ids, u.ID) && !u.Gone() {
			continue
		}
		rep, err := checkAndRemove(ctx, rt, Selector{RunID: u.ID})
		out = append(out, Reaped{Run: Run{ID: u.ID, Owner: strings.Join(u.Owners, ",")}, Report: rep, Err: err})
	}
	return out, nil
}

// How long checkAndRemove waits for the engine to confirm a removal, and
// how often it looks: a variable for the tests.
var confirmWait, confirmPoll = time.Minute, time.Second

// checkAndRemove removes what sel selects and returns what that was. A
// removal counts once the engine no longer lists the object: an accepted
// removal is not proof (the engine answers "already in progress" for a
// container it is still killing, and a container with a frozen task
// outlives its forced removal on cgroup v1), so whatever is still listed
// is removed again (RemoveContainer thaws a container the engine cannot
// kill) until confirmWait. The error names what is left then.
func checkAndRemove(ctx context.Context, rt Engine, sel Selector) (Report, error) {
	rep, err := Check(ctx, rt, sel)
	if err != nil {
		return rep, err
	}
	err = Remove(ctx, rt, rep)
	deadline := time.Now().Add(confirmWait)
	for {
		left, cerr := stillListed(ctx, rt, rep)
		switch {
		case cerr != nil:
			return rep, errors.Join(err, fmt.Errorf("confirming the removal: %w", cerr))
		case left.Empty():
			return rep, nil
		case time.Now().After(deadline):
			return rep, errors.Join(err, fmt.Errorf("still in the engine %s after removal: %s", confirmWait, left))
		}
		select {
		case <-ctx.Done():
			return rep, errors.Join(err, fmt.Errorf("still in the engine when the time ran out: %s", left))
		case <-time.After(confirmPoll):
		}
		err = Remove(ctx, rt, left)
	}
}

// stillListed returns what of rep the engine still lists.
func stillListed(ctx context.Context, rt Lister, rep Report) (Report, error) {
	now, err := Check(ctx, rt, rep.Selector)
	if err != nil {
		return Report{}, err
	}
	left := Report{Selector: rep.Selector}
	for _, c := range now.Containers {
		if slices.ContainsFunc(rep.Containers, func(o runtime.Container) bool { return o.ID == c.ID }) {
			left.Containers = append(left.Containers, c)
		}
	}
	for _, n := range now.Networks {
		if slices.ContainsFunc(rep.Networks, func(o runtime.Network) bool { return o.ID == n.ID }) {
			left.Networks = append(left.Networks, n)
		}
	}
	for _, v := range now.Volumes {
		if slices.ContainsFunc(rep.Volumes, func(o runtime.Volume) bool { return o.Name == v.Name }) {
			left.Volumes = append(left.Volumes, v)
		}
	}
	return left, nil
}

// selfOwner is this process as LabelOwner spells it.
func selfOwner() string { return runtime.ProcessOwner() }
