package logs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"

	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

// devObject is a CAPD Dev* object of kind with the given backend.
func devObject(kind, name string, backend map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"backend": backend}}}
	u.SetGroupVersionKind(infrav1.GroupVersion.WithKind(kind))
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}

// TestInMemoryMachinesGetANote: a Machine or Cluster on CAPD's in-memory
// backend gets a note and costs no engine call; one on the docker backend
// is collected from its container as before (here: missing, so recorded).
func TestInMemoryMachinesGetANote(t *testing.T) {
	t.Parallel()
	cl := crfake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(
		devObject("DevMachine", "fake-vm", map[string]any{"inMemory": map[string]any{"vm": map[string]any{}}}),
		devObject("DevMachine", "container", map[string]any{"docker": map[string]any{}}),
		devObject("DevCluster", "fake", map[string]any{"inMemory": map[string]any{}}),
	).Build()
	machine := func(name string) *clusterv1.Machine {
		return &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: clusterv1.MachineSpec{ClusterName: "c", InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "DevMachine", Name: name,
			}},
		}
	}
	f := fake.New()
	c := &Collector{Runtime: f}

	dir := t.TempDir()
	if err := c.CollectMachineLog(t.Context(), cl, machine("fake-vm"), dir); err != nil {
		t.Fatalf("in-memory machine: %v", err)
	}
	note, err := os.ReadFile(filepath.Join(dir, InMemoryNote))
	if err != nil || !strings.Contains(string(note), "Machine fake-vm runs on CAPD's in-memory backend") {
		t.Errorf("note = %q, %v", note, err)
	}
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fake"},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "DevCluster", Name: "fake",
		}},
	}
	if err := c.CollectInfrastructureLogs(t.Context(), cl, cluster, dir); err != nil {
		t.Fatalf("in-memory cluster: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LoadBalancerName("fake"), InMemoryNote)); err != nil {
		t.Errorf("no note for the in-memory cluster's load balancer: %v", err)
	}
	if n := len(f.Calls()); n != 0 {
		t.Errorf("%d engine calls for in-memory objects, want none", n)
	}

	// The docker backend, an unknown object, no client: the container.
	for _, tc := range []struct {
		name string
		cl   client.Client
	}{{"container", cl}, {"gone", cl}, {"container", nil}} {
		dir := t.TempDir()
		err := c.CollectMachineLog(t.Context(), tc.cl, machine(tc.name), dir)
		if err == nil || !strings.Contains(err.Error(), "steps failed") {
			t.Errorf("machine %s (client %v): error %v, want its missing container reported", tc.name, tc.cl != nil, err)
		}
		if _, err := os.Stat(filepath.Join(dir, InMemoryNote)); err == nil {
			t.Errorf("machine %s: an in-memory note", tc.name)
		}
	}
}
