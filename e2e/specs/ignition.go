package specs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// ignitionCheckTimeout bounds CheckIgnitionBootstrap: a few API reads and
// two commands in each machine.
const ignitionCheckTimeout = 2 * time.Minute

// CheckIgnitionBootstrap returns a QuickStartSpecInput's
// PostMachinesProvisioned for a flavor whose machines are bootstrapped
// from Ignition (capd-e2e's "ignition", as upstream's). Upstream's
// quick-start checks only that such a cluster comes up, which a
// bootstrap provider that fell back to cloud-init would pass too. This
// checks, for every Machine of the cluster, that:
//   - its KubeadmConfig asks for Ignition, and its bootstrap data Secret
//     holds an Ignition config (format "ignition", a JSON document with
//     ignition.version) rather than cloud-config;
//   - CAPD ran that config in the machine: its kubeadm.service unit
//     (cloud-init has none) ended with the result "success", and its
//     /etc/kubeadm.sh moved /etc/kubeadm.yml to /tmp, which it does
//     after kubeadm succeeded;
//   - on a worker, file holds content: the flavor's additional Ignition
//     config writes it, so a bootstrap that dropped that config fails.
//
// The callback has no context of its own (upstream's signature); its
// calls are bounded by ignitionCheckTimeout.
func CheckIgnitionBootstrap(engine Engine, file, content string) func(framework.ClusterProxy, string, string) {
	return func(mgmt framework.ClusterProxy, namespace, cluster string) {
		By(fmt.Sprintf("check that every Machine of %s was bootstrapped from Ignition, and each worker has %s", cluster, file))
		Expect(engine).ToNot(BeNil(), "CheckIgnitionBootstrap: the engine is required")
		ctx, cancel := context.WithTimeout(context.Background(), ignitionCheckTimeout)
		defer cancel()
		c := mgmt.GetClient()
		machines := &clusterv1.MachineList{}
		Expect(c.List(ctx, machines, client.InNamespace(namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster})).To(Succeed(), "list the Machines of %s", cluster)
		Expect(machines.Items).ToNot(BeEmpty(), "cluster %s has no Machine", cluster)
		workers := 0
		for _, m := range machines.Items {
			checkIgnitionMachine(ctx, c, engine, m)
			if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp {
				continue
			}
			workers++
			node := m.Status.NodeRef.Name
			got := execOutput(ctx, engine, node, "cat", file)
			Expect(got).To(Equal(content), "Machine %s (container %s): the file %s of its additional Ignition config", m.Name, node, file)
		}
		Expect(workers).To(BeNumerically(">", 0), "cluster %s has no worker Machine to check %s on", cluster, file)
	}
}

// checkIgnitionMachine checks one Machine's bootstrap: Ignition asked
// for, given, and run.
func checkIgnitionMachine(ctx context.Context, c client.Client, engine Engine, m clusterv1.Machine) {
	ref := m.Spec.Bootstrap.ConfigRef
	Expect(ref.Kind).To(Equal("KubeadmConfig"), "Machine %s: bootstrap config", m.Name)
	kc := &bootstrapv1.KubeadmConfig{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, kc)).To(Succeed(), "get KubeadmConfig %s of Machine %s", ref.Name, m.Name)
	Expect(kc.Spec.Format).To(Equal(bootstrapv1.Ignition), "KubeadmConfig %s of Machine %s: format", kc.Name, m.Name)

	Expect(m.Spec.Bootstrap.DataSecretName).ToNot(BeNil(), "Machine %s has no bootstrap data Secret", m.Name)
	secret := &corev1.Secret{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: *m.Spec.Bootstrap.DataSecretName}, secret)).To(Succeed(), "get the bootstrap data Secret of Machine %s", m.Name)
	Expect(string(secret.Data["format"])).To(Equal(string(bootstrapv1.Ignition)), "Secret %s of Machine %s: format", secret.Name, m.Name)
	var doc struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	Expect(json.Unmarshal(secret.Data["value"], &doc)).To(Succeed(), "Secret %s of Machine %s: the value is not an Ignition (JSON) config", secret.Name, m.Name)
	Expect(doc.Ignition.Version).ToNot(BeEmpty(), "Secret %s of Machine %s: no ignition.version", secret.Name, m.Name)

	Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "Machine %s has no Node", m.Name)
	node := m.Status.NodeRef.Name
	Expect(execOutput(ctx, engine, node, "systemctl", "show", "--property=Result", "--value", "kubeadm.service")).To(Equal("success"),
		"Machine %s (container %s): the result of kubeadm.service, the unit of its Ignition config that runs kubeadm", m.Name, node)
	Expect(execOutput(ctx, engine, node, "sh", "-c", "test -s /tmp/kubeadm.yml && echo moved")).To(Equal("moved"),
		"Machine %s (container %s): /tmp/kubeadm.yml, where the Ignition config's /etc/kubeadm.sh moves /etc/kubeadm.yml after kubeadm succeeded", m.Name, node)
}

// execOutput runs cmd in container and returns its standard output,
// trimmed; it fails the spec when the command cannot run or exits
// non-zero, with what it printed.
func execOutput(ctx context.Context, engine Engine, container string, cmd ...string) string {
	out, err := execOutputErr(ctx, engine, container, cmd...)
	Expect(err).ToNot(HaveOccurred())
	return out
}

// execOutputErr runs cmd in container and returns its standard output,
// trimmed, or an error with what it printed when it cannot run or exits
// non-zero: for a command retried until it succeeds.
func execOutputErr(ctx context.Context, engine Engine, container string, cmd ...string) (string, error) {
	var stdout, stderr strings.Builder
	res, err := engine.Exec(ctx, container, runtime.ExecOptions{Cmd: cmd, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return "", fmt.Errorf("run %q in %s: %w", strings.Join(cmd, " "), container, err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("run %q in %s: exit code %d: %s%s", strings.Join(cmd, " "), container, res.ExitCode, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}
