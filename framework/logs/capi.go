package logs

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
)

var _ framework.ClusterLogCollector = (*Collector)(nil)

// CollectMachineLog implements framework.ClusterLogCollector: it collects
// the container of machine m into outputPath (upstream passes
// <cluster folder>/machines/<machine>). The management cluster client is not
// used: everything needed is in m.
//
// A Machine on CAPD's in-memory backend (a DevMachine with
// spec.backend.inMemory) has no container: a note saying so is written
// instead (InMemoryNote), and nothing is asked of the engine.
func (c *Collector) CollectMachineLog(ctx context.Context, cl client.Client, m *clusterv1.Machine, outputPath string) error {
	if m == nil {
		return errors.New("collect machine logs: nil Machine")
	}
	if inMemory(ctx, cl, m.Spec.InfrastructureRef, "DevMachine", m.Namespace) {
		return writeInMemoryNote(outputPath, "Machine "+m.Name)
	}
	return c.CollectMachine(ctx, ContainerName(m.Spec.ClusterName, m.Name), outputPath)
}

// CollectMachinePoolLog implements framework.ClusterLogCollector: it
// collects every instance of the pool listed in m.Status.NodeRefs, at once,
// each into outputPath/<instance>.
func (c *Collector) CollectMachinePoolLog(ctx context.Context, _ client.Client, m *clusterv1.MachinePool, outputPath string) error {
	if m == nil {
		return errors.New("collect machine pool logs: nil MachinePool")
	}
	targets := make([]Target, 0, len(m.Status.NodeRefs))
	for _, ref := range m.Status.NodeRefs {
		targets = append(targets, Target{
			Container: ContainerName(m.Spec.ClusterName, ref.Name),
			Dir:       filepath.Join(outputPath, ref.Name),
		})
	}
	return c.CollectMachines(ctx, targets)
}

// CollectInfrastructureLogs implements framework.ClusterLogCollector: it
// collects the cluster's load balancer into outputPath/<cluster>-lb/
// (upstream wrote a single file, outputPath/<cluster>-lb.log, that mixed
// the inspect document with the log).
//
// A Cluster on CAPD's in-memory backend has no load balancer: a note
// saying so is written instead.
func (c *Collector) CollectInfrastructureLogs(ctx context.Context, mc client.Client, cl *clusterv1.Cluster, outputPath string) error {
	if cl == nil {
		return errors.New("collect infrastructure logs: nil Cluster")
	}
	if inMemory(ctx, mc, cl.Spec.InfrastructureRef, "DevCluster", cl.Namespace) {
		return writeInMemoryNote(filepath.Join(outputPath, LoadBalancerName(cl.Name)), "Cluster "+cl.Name)
	}
	name := LoadBalancerName(cl.Name)
	return c.CollectLoadBalancer(ctx, name, filepath.Join(outputPath, name))
}

// InMemoryNote is the file written in place of the logs of a Machine, or
// of the load balancer of a Cluster, on CAPD's in-memory backend.
const InMemoryNote = "in-memory.txt"

// inMemory reports whether ref, in namespace, is a CAPD object of kind
// (DevMachine, DevCluster) on the in-memory backend. Anything else, or a
// lookup that fails (no client, the object gone), is not: its container
// is then collected, or its absence recorded, as for any machine.
func inMemory(ctx context.Context, cl client.Reader, ref clusterv1.ContractVersionedObjectReference, kind, namespace string) bool {
	if cl == nil || ref.Kind != kind || ref.APIGroup != infrav1.GroupVersion.Group {
		return false
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(infrav1.GroupVersion.WithKind(kind))
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, obj); err != nil {
		return false
	}
	backend, found, err := unstructured.NestedMap(obj.Object, "spec", "backend", "inMemory")
	return err == nil && found && backend != nil
}

func writeInMemoryNote(dir, what string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, InMemoryNote), []byte(what+" runs on CAPD's in-memory backend: it has no container, so no logs.\n"), 0o644)
}
