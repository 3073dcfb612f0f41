package leak

import (
	"context"
	"os"
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
	host, _ := os.Hostname()
	_, _, start, _ := parseOwner(selfOwner())
	for _, owner := range []string{
		host + "/" + "999999999/1", // no such pid
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
	host, _ := os.Hostname()
	dead.owner = host + "/999999999/1" // a process of this host that is gone
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
