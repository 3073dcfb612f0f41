package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
)

// specKCPAdoption is the kcp-adoption spec's name, and its facts.
var specKCPAdoption = declare(specFacts{
	name: "kcp-adoption", label: LabelKCPAdoption,
	variables: []string{varKubernetesVersion},
	// createCluster's helpers it uses (the first step applied, the
	// infrastructure, the control plane ready, the Cluster Available and
	// the Machines Ready), then its own: the second step applied; the
	// standalone Machine with a Node, then Ready; with a
	// cloud-controller-manager, every Node initialised (cloud_provider.go
	// is not in files: its load balancer check is not run here).
	waits: slices.Concat(creationWaits,
		[]string{"wait-cluster", "wait-control-plane", "wait-control-plane", "wait-nodes-ready"}),
	files: []string{"kcp_adoption.go"},
})

// Labels of the kcp-adoption flavor's objects: which of the two steps
// applies each.
const (
	KCPAdoptionStep1Label = "kcp-adoption.step1"
	KCPAdoptionStep2Label = "kcp-adoption.step2"
)

// KCPAdoptionSpecInput is the input of KCPAdoptionSpec.
type KCPAdoptionSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of its waits.
	Timeout time.Duration

	// Flavor is the cluster template's flavor: a standalone
	// control-plane Machine with its objects labelled
	// KCPAdoptionStep1Label, and the KubeadmControlPlane, its machine
	// template and the Cluster naming it labelled KCPAdoptionStep2Label
	// (data/cluster-template-kcp-adoption.yaml). If unset,
	// "kcp-adoption", as upstream's.
	Flavor *string
}

// KCPAdoptionSpec is upstream's KCPAdoptionSpec (kcp-adoption) on
// capd-e2e's run: it creates a cluster whose only control-plane Machine
// is standalone, then applies a KubeadmControlPlane that must adopt that
// Machine without replacing it. It checks, as upstream does, that the
// KubeadmControlPlane controls the Machine, which is older than it, that
// it owns the cluster's certificates while each bootstrap secret stays
// with its KubeadmConfig, and that the Cluster is Available with its
// Machines Ready. Beyond upstream, it says which step a failure is in,
// times each, installs the cloud-controller-manager before the first
// Node registers and checks it initialised the Node, checks the owner
// references and finalizers of every object of the adopted cluster with
// upstream's assertions, checks the Machine is still the one it created
// (its UID), and deletes the cluster checking nothing is left.
//
// Spec name: "kcp-adoption". Intervals: wait-cluster,
// wait-control-plane, wait-delete-cluster, and with a
// CloudControllerManager wait-nodes-ready. Variables: KUBERNETES_VERSION.
func KCPAdoptionSpec(inputGetter func() KCPAdoptionSpecInput) {
	It("adopts a standalone control-plane Machine into a KubeadmControlPlane without replacing it",
		Label(LabelKCPAdoption),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specKCPAdoption, in.CommonInput, in.Timeout)
			proxy := r.in.BootstrapClusterProxy
			c := proxy.GetClient()
			wc := watchClient(proxy)
			yaml := r.generateTemplate(ctx, createOptions{
				flavor:            deref(in.Flavor, "kcp-adoption"),
				kubernetesVersion: r.variable(varKubernetesVersion),
				controlPlaneCount: 1,
				workerCount:       0,
			})
			r.trackCluster(ctx)
			r.applyStep(ctx, yaml, KCPAdoptionStep1Label)
			if r.in.CloudControllerManager != nil {
				r.installCloudControllerManager(ctx)
			}
			r.step("wait for cluster infrastructure", func() {
				r.waitForClusterProvisioned(ctx, wc)
			})
			cpLabels := client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName, clusterv1.MachineControlPlaneLabel: ""}
			var standalone clusterv1.Machine
			r.step("wait for the standalone control-plane Machine", func() {
				err := r.wait(wc, "wait-control-plane", "the standalone control-plane Machine of "+r.clusterName+" with a Node", &clusterv1.MachineList{}, cpLabels).Until(ctx, func(ctx context.Context) (bool, string) {
					n, all, err := r.machinesWithNode(ctx, c, cpLabels)
					if err != nil {
						return false, err.Error()
					}
					return n == 1 && all == 1, fmt.Sprintf("%d of %d control-plane Machines have a Node", n, all)
				})
				Expect(err).ToNot(HaveOccurred())
				err = r.wait(wc, "wait-control-plane", "the standalone control-plane Machine of "+r.clusterName+" Ready", &clusterv1.MachineList{}, cpLabels).Until(ctx, func(ctx context.Context) (bool, string) {
					machines := &clusterv1.MachineList{}
					if err := c.List(ctx, machines, client.InNamespace(r.namespace), cpLabels); err != nil {
						return false, err.Error()
					}
					if len(machines.Items) != 1 {
						return false, fmt.Sprintf("%d control-plane Machines", len(machines.Items))
					}
					standalone = machines.Items[0]
					problem := conditionTrue("Machine "+standalone.Name, standalone.Status.Conditions, clusterv1.ReadyCondition)
					return problem == "", problem
				})
				Expect(err).ToNot(HaveOccurred())
				Expect(controllerOf(&standalone)).To(BeEmpty(), "before the KubeadmControlPlane exists, nothing controls Machine %s", standalone.Name)
			})

			r.applyStep(ctx, yaml, KCPAdoptionStep2Label)
			// It waits for the KubeadmControlPlane to exist too.
			r.step("wait for control plane ready", func() {
				r.waitForControlPlaneReady(ctx, wc)
			})
			r.step("check the KubeadmControlPlane adopted the Machine", func() {
				kcp, err := r.controlPlane(ctx, c)
				Expect(err).ToNot(HaveOccurred())
				r.checkAdopted(ctx, c, kcp, &standalone)
			})
			if in.CloudControllerManager != nil {
				wl := r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
				DeferCleanup(wl.Dispose)
				r.checkNodesInitialised(ctx, wl)
			}
			r.verifyClusterHealthy(ctx, proxy)
			r.summary.Set("machines", "1 control plane, adopted")
			r.summary.Set("node images", r.nodeImages(ctx, c))
			// What the adoption leaves, unlike a KubeadmControlPlane's own
			// cluster (seen here with Cluster API v1.14.2): the Machine
			// and the kubeconfig Secret keep the Cluster, their owner
			// before the KubeadmControlPlane took them, beside it.
			clusterOwner := metav1.OwnerReference{Kind: "Cluster", APIVersion: clusterv1.GroupVersion.String()}
			kcpOwner := metav1.OwnerReference{Kind: "KubeadmControlPlane", APIVersion: controlplanev1.GroupVersion.String(), Controller: ptr.To(true)}
			r.owners = map[string][]metav1.OwnerReference{
				"Machine/" + standalone.Name:              {clusterOwner, kcpOwner},
				"Secret/" + r.clusterName + "-kubeconfig": {clusterOwner, kcpOwner},
			}
			r.step("check owner references and finalizers", func() {
				r.checkOwnership(ctx, proxy, false)
			})
			r.created = true
		})
}

// applyStep applies the objects of yaml that carry the label step
// (framework.WithLabelSelector), retrying at wait-cluster as
// createCluster does, so that a webhook briefly unavailable does not
// fail the spec.
func (r *run) applyStep(ctx context.Context, yaml []byte, step string) {
	r.step("apply the "+step+" objects", func() {
		req, err := labels.NewRequirement(step, selection.Exists, nil)
		Expect(err).ToNot(HaveOccurred())
		selector := labels.NewSelector().Add(*req)
		timeout, poll := r.durations("wait-cluster")
		Eventually(ctx, func() error {
			return r.in.BootstrapClusterProxy.CreateOrUpdate(ctx, yaml, framework.WithLabelSelector(selector))
		}, timeout, poll).Should(Succeed(), "apply the objects labelled %s", step)
	})
}

// checkAdopted checks, as upstream's KCPAdoptionSpec does, that kcp
// controls the cluster's one control-plane Machine, the one created
// before it (same UID, older than kcp), and that the cluster's secrets
// are owned as after an adoption: each bootstrap secret by its
// KubeadmConfig, the kubeconfig left as it was, every other one (the
// certificates) by kcp; 4 certificates, the kubeconfig and one bootstrap
// secret per Machine.
func (r *run) checkAdopted(ctx context.Context, c client.Client, kcp *controlplanev1.KubeadmControlPlane, standalone *clusterv1.Machine) {
	cpLabels := client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName, clusterv1.MachineControlPlaneLabel: ""}
	machines := &clusterv1.MachineList{}
	Expect(c.List(ctx, machines, client.InNamespace(r.namespace), cpLabels)).To(Succeed())
	Expect(machines.Items).To(HaveLen(1), "control-plane Machines of %s after the adoption", r.clusterName)
	m := machines.Items[0]
	Expect(m.UID).To(Equal(standalone.UID), "the KubeadmControlPlane replaced Machine %s with %s: it did not take the Machine's KubeadmConfig for one it would make (see data/cluster-template-kcp-adoption.yaml)", standalone.Name, m.Name)
	Expect(m.CreationTimestamp.Time).To(BeTemporally("<", kcp.CreationTimestamp.Time), "Machine %s is older than the KubeadmControlPlane", m.Name)
	Expect(controllerOf(&m)).To(Equal("KubeadmControlPlane/"+kcp.Name), "the controller of Machine %s", m.Name)

	configs := &bootstrapv1.KubeadmConfigList{}
	Expect(c.List(ctx, configs, client.InNamespace(r.namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName})).To(Succeed())
	bootstrapSecrets := map[string]string{}
	for _, kc := range configs.Items {
		if kc.Status.DataSecretName != "" {
			bootstrapSecrets[kc.Status.DataSecretName] = "KubeadmConfig/" + kc.Name
		}
	}
	secrets := &corev1.SecretList{}
	Expect(c.List(ctx, secrets, client.InNamespace(r.namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName})).To(Succeed())
	var names []string
	for i := range secrets.Items {
		s := &secrets.Items[i]
		names = append(names, s.Name)
		switch owner, bootstrap := bootstrapSecrets[s.Name]; {
		case strings.HasSuffix(s.Name, "-kubeconfig"):
		case bootstrap:
			Expect(controllerOf(s)).To(Equal(owner), "the controller of bootstrap secret %s", s.Name)
		default:
			Expect(controllerOf(s)).To(Equal("KubeadmControlPlane/"+kcp.Name), "the controller of secret %s", s.Name)
		}
	}
	Expect(names).To(HaveLen(4+1+len(machines.Items)), "secrets of %s: 4 certificates, the kubeconfig, one bootstrap secret per Machine", r.clusterName)
}

// controllerOf returns "<Kind>/<name>" of o's controller, or "".
func controllerOf(o client.Object) string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}
