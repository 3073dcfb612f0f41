package leak

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestOwnerLiveness(t *testing.T) {
	if got := selfOwner(); !(Run{Owner: got}).Alive() {
		t.Errorf("this process (%s) is not alive", got)
	}
	_, _, _, start, _ := runtime.ParseOwner(selfOwner())
	for _, owner := range []string{
		runtime.OwnerOf(999999999, 1),                                       // no such pid
		strings.Replace(selfOwner(), "/"+itoa(start), "/"+itoa(start+1), 1), // pid reused by another process
	} {
		if (Run{Owner: owner}).Alive() {
			t.Errorf("owner %s counts as alive", owner)
		}
	}
	// Another host's run cannot be checked: alive until MaxForeignAge.
	if !(Run{Owner: "elsewhere/1/1", Started: nowMinus(MaxForeignAge / 2)}).Alive() {
		t.Error("a recent run of another host counts as dead")
	}
	if (Run{Owner: "elsewhere/1/1", Started: nowMinus(2 * MaxForeignAge)}).Alive() {
		t.Error("an old run of another host counts as alive")
	}
}

func TestReapRemovesOnlyDeadRuns(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	dead := NewTracker(f, "deadrun")
	dead.owner = runtime.OwnerOf(999999999, 1) // a process of this host that is gone
	live := NewTracker(f, "liverun")
	for _, c := range []string{"mgmt-deadrun", "quick-start-abc"} {
		if err := dead.Track(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := dead.Track(ctx, "quick-start-abc"); err != nil {
		t.Errorf("tracking twice: %v", err)
	}
	if err := live.Track(ctx, "quick-start-live"); err != nil {
		t.Fatal(err)
	}
	add := func(name string, labels map[string]string) {
		f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: name, Labels: labels}})
	}
	add("mgmt-deadrun-control-plane", map[string]string{runtime.LabelCluster: "mgmt-deadrun"})
	add("quick-start-abc-md-0-x", map[string]string{runtime.LabelCluster: "quick-start-abc"})
	add("quick-start-abc-svclb-1", map[string]string{LabelTrackedCluster: "quick-start-abc"})
	add("helper-of-deadrun", runtime.RunLabels("deadrun", "test", nil))
	add("quick-start-live-md-0-y", map[string]string{runtime.LabelCluster: "quick-start-live"})
	add("someone-elses", map[string]string{runtime.LabelCluster: "other"})

	runs, err := Runs(ctx, f)
	if err != nil || len(runs) != 2 || !slices.Equal(runs[0].Clusters, []string{"mgmt-deadrun", "quick-start-abc"}) {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	rep, err := CheckRun(ctx, f, "deadrun")
	if err != nil || len(rep.Containers) != 4 || len(rep.Volumes) != 0 {
		t.Fatalf("CheckRun(deadrun) = %s, %v; want 4 containers and the markers not counted", rep, err)
	}

	reaped, err := Reap(ctx, f)
	if err != nil || len(reaped) != 1 || reaped[0].Run.ID != "deadrun" || reaped[0].Err != nil {
		t.Fatalf("Reap = %+v, %v", reaped, err)
	}
	left, _ := f.ListContainers(ctx, runtime.Filter{})
	var names []string
	for _, c := range left {
		names = append(names, c.Name)
	}
	if want := []string{"quick-start-live-md-0-y", "someone-elses"}; !slices.Equal(names, want) {
		t.Errorf("after Reap: %v, want %v", names, want)
	}
	if runs, _ := Runs(ctx, f); len(runs) != 1 || runs[0].ID != "liverun" {
		t.Errorf("markers after Reap: %+v", runs)
	}

	// Named explicitly, a live run is reaped too (ci-e2e.sh, after killing
	// its suite).
	if reaped, err := Reap(ctx, f, "liverun"); err != nil || len(reaped) != 1 || len(reaped[0].Report.Containers) != 1 {
		t.Errorf("Reap(liverun) = %+v, %v", reaped, err)
	}
}

func TestFinishRunKeepsMarkersOfADirtyRun(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	tr := NewTracker(f, "r1")
	if err := tr.Track(ctx, "wl"); err != nil {
		t.Fatal(err)
	}
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "wl-cp", Labels: map[string]string{runtime.LabelCluster: "wl"}}})
	if err := FinishRun(ctx, f, "r1"); err == nil || !strings.Contains(err.Error(), "container wl-cp") {
		t.Errorf("FinishRun with a leftover = %v", err)
	}
	if runs, _ := Runs(ctx, f); len(runs) != 1 {
		t.Error("the markers of a dirty run were removed")
	}
	if err := f.RemoveContainer(ctx, "wl-cp"); err != nil {
		t.Fatal(err)
	}
	if err := FinishRun(ctx, f, "r1"); err != nil {
		t.Errorf("FinishRun of a clean run = %v", err)
	}
	if runs, _ := Runs(ctx, f); len(runs) != 0 {
		t.Errorf("markers left: %+v", runs)
	}
}

func itoa(u uint64) string { return strconv.FormatUint(u, 10) }

func nowMinus(d time.Duration) time.Time { return time.Now().Add(-d) }

func TestReapUnmarkedRuns(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	deadOwner := runtime.OwnerOf(999999999, 1)
	add := func(name, runID, owner string) {
		f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: name,
			Labels: runtime.RunLabels(runID, "test", map[string]string{runtime.LabelOwner: owner})}})
	}
	add("killed-test-a", "killedtest", deadOwner)
	add("killed-test-b", "killedtest", deadOwner)
	add("running-test", "livetest", runtime.ProcessOwner())
	add("in-a-container", "ccmrun", "ccm-pod-xyz/1/1") // another host: cannot tell
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "old-harness", Labels: map[string]string{runtime.LabelRunID: "noowner"}}})

	u, err := UnmarkedRuns(ctx, f)
	if err != nil || len(u) != 4 {
		t.Fatalf("UnmarkedRuns = %+v, %v", u, err)
	}
	gone := map[string]bool{}
	for _, r := range u {
		gone[r.ID] = r.Gone()
	}
	if want := map[string]bool{"killedtest": true, "livetest": false, "ccmrun": false, "noowner": false}; !maps.Equal(gone, want) {
		t.Errorf("gone = %v, want %v", gone, want)
	}
	reaped, err := Reap(ctx, f)
	if err != nil || len(reaped) != 1 || reaped[0].Run.ID != "killedtest" || len(reaped[0].Report.Containers) != 2 {
		t.Fatalf("Reap = %+v, %v", reaped, err)
	}
	// Named, a run without owners goes too.
	if reaped, err := Reap(ctx, f, "noowner"); err != nil || len(reaped) != 1 || reaped[0].Run.ID != "noowner" {
		t.Errorf("Reap(noowner) = %+v, %v", reaped, err)
	}
	left, _ := f.ListContainers(ctx, runtime.Filter{})
	if len(left) != 2 {
		t.Errorf("left %d containers, want the live test's and the container-owned one", len(left))
	}
}

func TestKeptRunIsReapedOnlyWhenNamed(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	tr := NewTrackerFor(f, "keptrun", runtime.OwnerOf(999999999, 1)) // its owner is gone
	if err := tr.Track(ctx, "mgmt-keptrun"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Keep(ctx, "explore"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Keep(ctx, "bad name"); err == nil {
		t.Error("Keep accepted a name with a space")
	}
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "mgmt-keptrun-control-plane", Labels: map[string]string{runtime.LabelCluster: "mgmt-keptrun"}}})
	runs, _ := Runs(ctx, f)
	if len(runs) != 1 || runs[0].Kept != "explore" || !slices.Equal(runs[0].Clusters, []string{"mgmt-keptrun"}) {
		t.Fatalf("Runs = %+v", runs)
	}
	if reaped, err := Reap(ctx, f); err != nil || len(reaped) != 0 {
		t.Fatalf("Reap reaped a kept run: %+v, %v", reaped, err)
	}
	if reaped, err := Reap(ctx, f, "explore"); err != nil || len(reaped) != 1 || len(reaped[0].Report.Containers) != 1 {
		t.Fatalf("Reap(explore) = %+v, %v", reaped, err)
	}
	if runs, _ := Runs(ctx, f); len(runs) != 0 {
		t.Errorf("markers left: %+v", runs)
	}
}

// lingering is an engine that accepts a container's removal and keeps the
// container for the first ignore calls, as the engine does when the
// removal is already in progress or a frozen task holds it.
type lingering struct {
	*fake.Runtime
	name    string
	ignore  int
	removes int
}

func (l *lingering) RemoveContainer(ctx context.Context, nameOrID string) error {
	c, err := l.InspectContainer(ctx, nameOrID)
	if err == nil && c.Name == l.name {
		l.removes++
		if l.removes <= l.ignore {
			return nil
		}
	}
	return l.Runtime.RemoveContainer(ctx, nameOrID)
}

// Reap says a run was removed only once the engine no longer lists what
// it found: a container whose removal was accepted but that is still
// there is removed again, and one that stays makes the run's Err, named.
func TestReapConfirmsRemoval(t *testing.T) {
	confirmWait, confirmPoll = 200*time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { confirmWait, confirmPoll = time.Minute, time.Second })
	for _, c := range []struct {
		name   string
		ignore int
		ok     bool
	}{
		{"gone on the second try", 1, true},
		{"never gone", 1 << 30, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			e := &lingering{Runtime: fake.New(), name: "frozen", ignore: c.ignore}
			e.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "frozen",
				Labels: runtime.RunLabels("killedtest", "test", map[string]string{runtime.LabelOwner: runtime.OwnerOf(999999999, 1)})}})
			reaped, err := Reap(ctx, e)
			if err != nil || len(reaped) != 1 {
				t.Fatalf("Reap = %+v, %v", reaped, err)
			}
			left, _ := e.ListContainers(ctx, runtime.Filter{})
			switch r := reaped[0]; {
			case c.ok && (r.Err != nil || len(left) != 0 || e.removes != 2):
				t.Errorf("Err %v, left %d containers after %d removals; want none after 2", r.Err, len(left), e.removes)
			case !c.ok && (r.Err == nil || !strings.Contains(r.Err.Error(), "container frozen")):
				t.Errorf("Err %v, want one naming container frozen (left %d)", r.Err, len(left))
			}
		})
	}
}
