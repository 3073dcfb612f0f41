package specs

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestChainedPlan: Cluster API's plan for the default chain upgrades the
// control plane one minor at a time and the workers once, at the end (the
// skew policy lets them lag two minors); a chain that skips a minor or
// misses an end is refused, naming what is wrong.
func TestChainedPlan(t *testing.T) {
	ctx := context.Background()
	p, err := chainedPlan(ctx, "v1.35.4", "v1.37.2", []string{"v1.35.4", "v1.36.3", "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.controlPlane, []string{"v1.36.3", "v1.37.2"}) || !slices.Equal(p.workers, []string{"v1.37.2"}) {
		t.Errorf("plan = control plane %v, workers %v; want [v1.36.3 v1.37.2], [v1.37.2]", p.controlPlane, p.workers)
	}
	if got, want := p.String(), "v1.35.4 -> v1.37.2; control plane v1.36.3, v1.37.2; workers v1.37.2"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// The hooks upstream's spec expects for that plan.
	want := []string{
		"BeforeClusterCreate", "BeforeClusterUpgrade-v1.35.4-v1.37.2", "AfterClusterUpgrade-v1.37.2", "BeforeClusterDelete",
		"BeforeControlPlaneUpgrade-v1.35.4-v1.36.3", "AfterControlPlaneUpgrade-v1.36.3",
		"BeforeControlPlaneUpgrade-v1.36.3-v1.37.2", "AfterControlPlaneUpgrade-v1.37.2",
		"BeforeWorkersUpgrade-v1.35.4-v1.37.2", "AfterWorkersUpgrade-v1.37.2",
	}
	if got := p.hookKeys(); !slices.Equal(got, want) {
		t.Errorf("hookKeys() = %v\nwant %v", got, want)
	}

	// Four minors: the workers must go along once on the way (at most
	// three minors behind the control plane).
	p, err = chainedPlan(ctx, "v1.33.1", "v1.37.2", []string{"v1.33.1", "v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.controlPlane) != 4 || len(p.workers) < 2 || p.workers[len(p.workers)-1] != "v1.37.2" {
		t.Errorf("four minors: control plane %v, workers %v", p.controlPlane, p.workers)
	}

	for _, c := range []struct {
		name, from, to string
		versions       []string
		want           string
	}{
		{"a minor skipped", "v1.35.4", "v1.37.2", []string{"v1.35.4", "v1.37.2"}, "expecting a version with minor 35 or 36, found version v1.37.2"},
		{"from not listed", "v1.35.4", "v1.37.2", []string{"v1.36.3", "v1.37.2"}, "do not include v1.35.4"},
		{"to not listed", "v1.35.4", "v1.37.2", []string{"v1.35.4", "v1.36.3"}, "do not include v1.37.2"},
		{"one minor", "v1.36.3", "v1.37.2", []string{"v1.36.3", "v1.37.2"}, "RuntimeSDKSpec covers one minor"},
	} {
		_, err := chainedPlan(ctx, c.from, c.to, c.versions)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: chainedPlan = %v, want an error with %q", c.name, err, c.want)
		}
	}
}
