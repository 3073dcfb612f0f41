package leak_test

import (
	"context"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// TestIntegrationLeakCheck plants a container, a network and a volume with a
// run id in the real engine, expects the check to find all three, removes
// them through the report and expects a clean second check.
func TestIntegrationLeakCheck(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	runID := runtime.NewRunID()
	labels := runtime.RunLabels(runID, "leak-test", map[string]string{runtime.LabelCluster: "leak-" + runID})
	name := "capd-e2e-leak-" + runID
	ref, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	sel := leak.Selector{RunID: runID}
	t.Cleanup(func() { // if an assertion below fails, do not leak ourselves
		rep, _ := leak.Check(context.Background(), rt, sel)
		_ = leak.Remove(context.Background(), rt, rep)
	})
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{Name: name, Image: ref, Labels: labels}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateNetwork(ctx, name, labels); err != nil {
		t.Fatal(err)
	}
	if err := rt.CreateVolume(ctx, name, labels); err != nil {
		t.Fatal(err)
	}

	rep, err := leak.Check(ctx, rt, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Containers) != 1 || rep.Containers[0].Name != name || len(rep.Networks) != 1 || len(rep.Volumes) != 1 {
		t.Fatalf("planted leftovers not found: %s", rep)
	}
	byCluster, err := leak.Check(ctx, rt, leak.Selector{Cluster: "leak-" + runID})
	if err != nil || len(byCluster.Containers) != 1 {
		t.Fatalf("by cluster label: %s, %v", byCluster, err)
	}

	if err := leak.Remove(ctx, rt, rep); err != nil {
		t.Fatal(err)
	}
	rep, err = leak.Check(ctx, rt, sel)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Empty() {
		t.Fatalf("after removal: %s", rep)
	}
}
