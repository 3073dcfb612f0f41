package specs

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
)

// specIPv6 is the IPv6-only quick-start's name, and its facts. Its
// clusters' API endpoint is an IPv6 address, which the management
// cluster's controllers must reach: it asks for a dual-stack management
// cluster.
var specIPv6 = declare(specFacts{
	name: "ipv6", label: LabelIPv6Only,
	variables:           []string{varKubernetesVersion},
	dualStackManagement: true,
	waits:               quickStartWaits,
	files:               []string{"ipv6.go", "quick_start.go", "cloud_provider.go"},
})

// ipv6CheckTimeout bounds CheckIPv6Only: a few reads, one Service
// created and deleted, and commands in each machine.
const ipv6CheckTimeout = 3 * time.Minute

// IPv6SpecInput is the input of IPv6Spec.
type IPv6SpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of its waits at the
	// config's intervals.
	Timeout time.Duration

	// Flavor is an IPv6-only cluster template flavor. If unset, "ipv6"
	// (capd-e2e's and upstream's).
	Flavor string

	// ControlPlaneMachineCount and WorkerMachineCount are the machines of
	// the flavor's control plane and MachineDeployment. If unset, 1 each
	// (upstream's quick-start's).
	ControlPlaneMachineCount *int64
	WorkerMachineCount       *int64
}

// IPv6Spec is upstream's IPv6 quick-start (its ipv6 flavor): it creates
// an IPv6-only cluster with the quick-start's checks (with a
// CloudControllerManager: every Node initialised, a Service of type
// LoadBalancer answering from the host), checks that the cluster is
// IPv6-only with real traffic (CheckIPv6Only), and deletes it. Upstream's
// spec checks only that such a cluster comes up.
//
// The cluster's API endpoint is its load balancer's IPv6 address, so the
// management cluster must be dual-stack: the spec's facts ask the suite
// for one (suite.Requirement.DualStackManagement), which the suite
// creates when this spec is selected.
//
// Spec name: "ipv6" (upstream's runs as "quick-start"). Variables:
// KUBERNETES_VERSION. Intervals: the quick-start's.
func IPv6Spec(inputGetter func() IPv6SpecInput) {
	It("creates an IPv6-only workload cluster whose Machines all become Ready, and deletes it without leftovers",
		Label(LabelQuickStart, LabelIPv6, LabelIPv6Only),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specIPv6, in.CommonInput, in.Timeout)
			if in.Flavor == "" {
				in.Flavor = "ipv6"
			}
			// The flavor's haproxy template for CAPD (data/): a ConfigMap
			// of the cluster's that nothing owns, which upstream's
			// assertions, knowing only ClusterResourceSets' ConfigMaps,
			// would refuse.
			r.ownerless = map[string]bool{"ConfigMap/" + r.clusterName + "-lb-config": true}
			r.createQuickStartCluster(ctx, createOptions{
				flavor:                  in.Flavor,
				kubernetesVersion:       r.variable(varKubernetesVersion),
				controlPlaneCount:       deref(in.ControlPlaneMachineCount, 1),
				workerCount:             deref(in.WorkerMachineCount, 1),
				postMachinesProvisioned: CheckIPv6Only(r.in.Runtime),
			})
		})
}

// CheckIPv6Only returns a QuickStartSpecInput's PostMachinesProvisioned
// for an IPv6-only flavor (capd-e2e's ipv6, as upstream's). It checks,
// each failure naming the object:
//   - the Cluster's API endpoint is an IPv6 address: what the management
//     cluster's controllers reached the cluster at;
//   - every Node has IPv6 Pod ranges and InternalIPs only (with the
//     cloud-controller-manager, which gives a node both its addresses
//     unless told the cluster's families: framework/ccm does);
//   - the kubernetes Service and a new Service in front of CoreDNS get
//     IPv6 ClusterIPs only;
//   - every CoreDNS Pod has IPv6 Pod IPs only;
//   - traffic flows: from every node (a command in its container),
//     CoreDNS's health endpoint answers on each Pod IP of each CoreDNS
//     Pod, on its node or another (the CNI's routes), and on the
//     Service's ClusterIP (kube-proxy's rules).
//
// The callback has no context of its own (upstream's signature); its
// calls are bounded by ipv6CheckTimeout.
func CheckIPv6Only(engine Engine) func(framework.ClusterProxy, string, string) {
	return func(mgmt framework.ClusterProxy, namespace, cluster string) {
		By(fmt.Sprintf("check that %s is IPv6-only: its API endpoint, Nodes, Services and Pods", cluster))
		Expect(engine).ToNot(BeNil(), "CheckIPv6Only: the engine is required")
		ctx, cancel := context.WithTimeout(context.Background(), ipv6CheckTimeout)
		defer cancel()
		ipv6 := []corev1.IPFamily{corev1.IPv6Protocol}

		cl := &clusterv1.Cluster{}
		Expect(mgmt.GetClient().Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, cl)).To(Succeed(), "get Cluster %s", cluster)
		Expect(families([]string{cl.Spec.ControlPlaneEndpoint.Host})).To(Equal(ipv6), "Cluster %s: its API endpoint %s", cluster, cl.Spec.ControlPlaneEndpoint.Host)

		wl := mgmt.GetWorkloadCluster(ctx, namespace, cluster)
		defer wl.Dispose(ctx)
		c := wl.GetClient()

		nodes := listNodes(ctx, c, cluster)
		for _, n := range nodes {
			Expect(families(n.Spec.PodCIDRs)).To(Equal(ipv6), "Node %s: the families of its Pod ranges %v", n.Name, n.Spec.PodCIDRs)
			internal := internalIPs(n)
			Expect(internal).ToNot(BeEmpty(), "Node %s has no InternalIP", n.Name)
			Expect(families(internal)).To(HaveEach(corev1.IPv6Protocol), "Node %s: the families of its InternalIPs %v", n.Name, internal)
		}

		kubernetes := &corev1.Service{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, kubernetes)).To(Succeed())
		Expect(families(kubernetes.Spec.ClusterIPs)).To(Equal(ipv6), "Service default/kubernetes: ClusterIPs %v", kubernetes.Spec.ClusterIPs)

		svc, deleteSvc := createCoreDNSHealthService(ctx, c, "capd-e2e-ipv6-", nil)
		defer deleteSvc()
		Expect(families(svc.Spec.ClusterIPs)).To(Equal(ipv6), "Service %s: ClusterIPs %v", svc.Name, svc.Spec.ClusterIPs)

		targets := append(coreDNSTargets(ctx, c, ipv6), clusterIPTargets(svc)...)
		checkReachable(ctx, engine, nodes, targets)
		By(fmt.Sprintf("%s: API endpoint [%s]:%d; %d Nodes each reached %d IPv6 addresses: %s", cluster,
			cl.Spec.ControlPlaneEndpoint.Host, cl.Spec.ControlPlaneEndpoint.Port, len(nodes), len(targets), strings.Join(targets, ", ")))
	}
}
