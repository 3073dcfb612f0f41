package leak_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestCheckSelectsByLabel(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	mine := runtime.RunLabels("run1", "test", nil)
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "a", Labels: mine}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "other", Labels: runtime.RunLabels("run2", "test", nil)}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "wl-md-0", Labels: map[string]string{runtime.LabelCluster: "wl"}}})
	if _, err := f.CreateNetwork(ctx, "n1", mine); err != nil {
		t.Fatal(err)
	}
	if err := f.CreateVolume(ctx, "v1", mine); err != nil {
		t.Fatal(err)
	}

	rep, err := leak.Check(ctx, f, leak.Selector{RunID: "run1", Cluster: "wl"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range rep.Containers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "a,wl-md-0" || len(rep.Networks) != 1 || len(rep.Volumes) != 1 {
		t.Fatalf("report = %s", rep)
	}
	if rep.Err() == nil || !strings.Contains(rep.String(), "container wl-md-0") || !strings.Contains(rep.String(), "volume v1") {
		t.Errorf("report text: %s", rep)
	}

	if err := leak.Remove(ctx, f, rep); err != nil {
		t.Fatal(err)
	}
	rep, err = leak.Check(ctx, f, leak.Selector{RunID: "run1", Cluster: "wl"})
	if err != nil || !rep.Empty() || rep.Err() != nil {
		t.Fatalf("after Remove: %s, %v", rep, err)
	}
	if _, err := f.InspectContainer(ctx, "other"); err != nil {
		t.Errorf("Remove touched another run's container: %v", err)
	}
}

func TestCheckNeedsASelector(t *testing.T) {
	if _, err := leak.Check(context.Background(), fake.New(), leak.Selector{}); err == nil || !strings.Contains(err.Error(), "selector") {
		t.Errorf("empty selector: %v", err)
	}
}

// kind's Podman provider gives each node a named /var volume labelled
// "<node>=true": a killed run's must be found through its cluster, and
// only its own: cluster "capd-e2e-abc-worker" has a node
// "capd-e2e-abc-worker-control-plane", which starts like abc's workers.
func TestCheckFindsKindPodmanNodeVolumes(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	for name, node := range map[string]string{
		"v-cp": "capd-e2e-abc-control-plane", "v-w2": "capd-e2e-abc-worker2",
		"v-other": "capd-e2e-abcd-control-plane", "v-lb": "capd-e2e-abc-external-load-balancer",
		"v-nested": "capd-e2e-abc-worker-control-plane", "v-nested-w": "capd-e2e-abc-control-plane-x-worker3",
	} {
		if err := f.CreateVolume(ctx, name, map[string]string{node: "true"}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := leak.Check(ctx, f, leak.Selector{Cluster: "capd-e2e-abc"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range rep.Volumes {
		names = append(names, v.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "v-cp,v-w2" {
		t.Errorf("volumes of cluster capd-e2e-abc: %v; want its two node volumes, not another cluster's", names)
	}
}
