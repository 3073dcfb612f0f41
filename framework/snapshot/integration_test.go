package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
	"github.com/capd-e2e/capd-e2e/framework/snapshot"
)

func TestIntegrationSnapshot(t *testing.T) {
	r := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}

	runID := runtime.NewRunID()
	cluster := "capd-e2e-it-" + runID
	run := func(name, role string) {
		id, err := r.RunContainer(ctx, runtime.ContainerSpec{
			Name:  name,
			Image: ref,
			Labels: runtime.RunLabels(runID, "snapshot-integration-test", map[string]string{
				runtime.LabelCluster: cluster, runtime.LabelRole: role,
			}),
			PublishPorts: []int{6443},
		})
		if err != nil {
			t.Fatalf("run %q: %v", name, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := r.RemoveContainer(ctx, id); err != nil {
				t.Errorf("remove %q: %v", name, err)
			}
		})
	}
	run(cluster+"-cp-0", "control-plane")
	run(cluster+"-md-0", "worker")
	if err := r.Kill(ctx, cluster+"-md-0", "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, cluster+"-md-0"); err != nil {
		t.Fatal(err)
	}

	s, err := snapshot.Take(ctx, r, snapshot.Filter{Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Containers) != 2 {
		t.Fatalf("snapshot has %d containers, want 2: %+v", len(s.Containers), s.Containers)
	}
	cp, md := s.Containers[0], s.Containers[1]
	if cp.Name != cluster+"-cp-0" || !cp.Running || cp.Role != "control-plane" || cp.Image != ref ||
		len(cp.Networks) == 0 || cp.Labels[runtime.LabelRunID] != runID {
		t.Errorf("control plane = %+v", cp)
	}
	var published bool
	for _, p := range cp.Ports {
		published = published || (p.ContainerPort == 6443 && p.HostPort != 0)
	}
	if !published {
		t.Errorf("control plane ports = %+v, want 6443 published", cp.Ports)
	}
	if md.Running || md.State != "exited" || md.ExitCode != 137 || md.FinishedAt.IsZero() {
		t.Errorf("killed worker = %+v, want exited with 137", md)
	}

	dir := t.TempDir()
	if err := s.Save(dir); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, snapshot.TableFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:\n%s", snapshot.TableFile, table)
	for _, want := range []string{cluster + "-md-0", "exited", "137", "6443/tcp->"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, snapshot.JSONFile)); err != nil {
		t.Error(err)
	}

	// By name prefix alone, the same two.
	s2, err := snapshot.Take(ctx, r, snapshot.Filter{NamePrefix: cluster + "-"})
	if err != nil || len(s2.Containers) != 2 {
		t.Errorf("by prefix: %d containers, %v", len(s2.Containers), err)
	}
}
