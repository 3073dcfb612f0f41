package logs

import (
	"context"
	"errors"
	"path/filepath"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

var _ framework.ClusterLogCollector = (*Collector)(nil)

// CollectMachineLog implements framework.ClusterLogCollector: it collects
// the container of machine m into outputPath (upstream passes
// <cluster folder>/machines/<machine>). The management cluster client is not
// used: everything needed is in m.
func (c *Collector) CollectMachineLog(ctx context.Context, _ client.Client, m *clusterv1.Machine, outputPath string) error {
	if m == nil {
		return errors.New("collect machine logs: nil Machine")
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
func (c *Collector) CollectInfrastructureLogs(ctx context.Context, _ client.Client, cl *clusterv1.Cluster, outputPath string) error {
	if cl == nil {
		return errors.New("collect infrastructure logs: nil Cluster")
	}
	name := LoadBalancerName(cl.Name)
	return c.CollectLoadBalancer(ctx, name, filepath.Join(outputPath, name))
}
