package specs

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/test/framework"
)

// dualStackCheckTimeout bounds CheckDualStack: a few reads, one Service
// created and deleted, and CoreDNS's Pods given addresses by the CNI
// (which they have by the time the machines are provisioned, unless the
// CNI cannot give an IPv6 one).
const dualStackCheckTimeout = 3 * time.Minute

// CheckDualStack returns a QuickStartSpecInput's PostMachinesProvisioned
// for a dual-stack flavor whose first Service and Pod ranges are of
// family primary (capd-e2e's topology-dualstack-ipv4-primary and
// -ipv6-primary, as upstream's); DualStackSpec runs it before the e2e
// tests of [Feature:IPv6DualStack]. It checks what those assume, each
// failure naming the object, so that a cluster that is not dual-stack
// fails with that said, not as a failed e2e test:
//   - every Node has a Pod range of each family, the first of primary,
//     and an InternalIP of each family;
//   - the kubernetes Service's first ClusterIP is of primary (the API
//     server's Service ranges in the cluster's order);
//   - a Service that requires dual-stack gets a ClusterIP of each
//     family, primary first;
//   - every CoreDNS Pod has a Pod IP of each family: the CNI (kube-router
//     with IPv6 on) gives Pods addresses of both;
//   - traffic flows in both families: from every node (a command in its
//     container), CoreDNS's health endpoint answers on each Pod IP of
//     each CoreDNS Pod, on its node or another (the CNI's routes), and
//     on each ClusterIP of a dual-stack Service in front of it
//     (kube-proxy's rules). In either order: the
//     kubelet puts first the family of the node's first address (it has
//     no --node-ip here), and the Nodes' addresses list IPv4 first, as
//     CAPD's own do for a dual-stack cluster (seen: an IPv6-first
//     cluster's CoreDNS Pods with IPv4 first).
//
// The callback has no context of its own (upstream's signature); its
// calls are bounded by dualStackCheckTimeout.
func CheckDualStack(engine Engine, primary corev1.IPFamily) func(framework.ClusterProxy, string, string) {
	return func(mgmt framework.ClusterProxy, namespace, cluster string) {
		By(fmt.Sprintf("check that %s is dual-stack, %s first: Nodes, Services and Pods", cluster, primary))
		Expect(primary).To(BeElementOf(corev1.IPv4Protocol, corev1.IPv6Protocol), "CheckDualStack: the primary family")
		Expect(engine).ToNot(BeNil(), "CheckDualStack: the engine is required")
		ctx, cancel := context.WithTimeout(context.Background(), dualStackCheckTimeout)
		defer cancel()
		wl := mgmt.GetWorkloadCluster(ctx, namespace, cluster)
		defer wl.Dispose(ctx)
		c := wl.GetClient()
		both := []corev1.IPFamily{primary, otherFamily(primary)}

		nodes := listNodes(ctx, c, cluster)
		for _, n := range nodes {
			Expect(families(n.Spec.PodCIDRs)).To(Equal(both), "Node %s: the families of its Pod ranges %v", n.Name, n.Spec.PodCIDRs)
			internal := internalIPs(n)
			Expect(families(internal)).To(ContainElements(both), "Node %s: the families of its InternalIPs %v", n.Name, internal)
		}

		kubernetes := &corev1.Service{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, kubernetes)).To(Succeed())
		Expect(families(kubernetes.Spec.ClusterIPs)[0]).To(Equal(primary), "Service default/kubernetes: ClusterIPs %v", kubernetes.Spec.ClusterIPs)

		// CoreDNS's health endpoint, behind a Service that requires both
		// families.
		svc, deleteSvc := createCoreDNSHealthService(ctx, c, "capd-e2e-dualstack-", ptr.To(corev1.IPFamilyPolicyRequireDualStack))
		defer deleteSvc()
		Expect(families(svc.Spec.ClusterIPs)).To(Equal(both), "Service %s (RequireDualStack): ClusterIPs %v", svc.Name, svc.Spec.ClusterIPs)

		targets := append(coreDNSTargets(ctx, c, both), clusterIPTargets(svc)...)

		// Traffic of both families, from every node: to each CoreDNS Pod
		// (on this node or another: the CNI's routes) and to each of the
		// Service's ClusterIPs (kube-proxy's rules of both families).
		checkReachable(ctx, engine, nodes, targets)
		By(fmt.Sprintf("%d Nodes each reached %d addresses of both families: %s", len(nodes), len(targets), strings.Join(targets, ", ")))
	}
}

// listNodes returns the cluster's Nodes, of which there must be one at
// least.
func listNodes(ctx context.Context, c client.Client, cluster string) []corev1.Node {
	nodes := &corev1.NodeList{}
	Expect(c.List(ctx, nodes)).To(Succeed(), "list the Nodes of %s", cluster)
	Expect(nodes.Items).ToNot(BeEmpty(), "cluster %s has no Node", cluster)
	return nodes.Items
}

// internalIPs returns the Node's InternalIP addresses, in order.
func internalIPs(n corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}

// createCoreDNSHealthService creates a Service in front of CoreDNS's
// health endpoint (port 80), of the IP family policy given (nil: the
// cluster's default), and returns it with the function that deletes it.
func createCoreDNSHealthService(ctx context.Context, c client.Client, generateName string, policy *corev1.IPFamilyPolicy) (*corev1.Service, func()) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, GenerateName: generateName},
		Spec: corev1.ServiceSpec{
			IPFamilyPolicy: policy,
			Selector:       map[string]string{"k8s-app": "kube-dns"},
			Ports:          []corev1.ServicePort{{Name: "health", Port: 80, TargetPort: intstr.FromInt32(coreDNSHealthPort)}},
		},
	}
	Expect(c.Create(ctx, svc)).To(Succeed(), "create a Service %s… in front of CoreDNS", generateName)
	return svc, func() {
		Expect(client.IgnoreNotFound(c.Delete(ctx, svc))).To(Succeed(), "delete Service %s", svc.Name)
	}
}

// clusterIPTargets returns the address of the health endpoint behind each
// ClusterIP of svc (createCoreDNSHealthService's).
func clusterIPTargets(svc *corev1.Service) []string {
	var out []string
	for _, ip := range svc.Spec.ClusterIPs {
		out = append(out, net.JoinHostPort(ip, "80"))
	}
	return out
}

// coreDNSTargets waits until every CoreDNS Pod has Pod IPs of exactly the
// families want (in any order) and returns the address of the health
// endpoint on each of them.
func coreDNSTargets(ctx context.Context, c client.Client, want []corev1.IPFamily) []string {
	var targets []string
	Eventually(func(g Gomega) {
		targets = nil
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{"k8s-app": "kube-dns"})).To(Succeed())
		g.Expect(pods.Items).ToNot(BeEmpty(), "no CoreDNS Pod")
		for _, p := range pods.Items {
			var ips []string
			for _, ip := range p.Status.PodIPs {
				ips = append(ips, ip.IP)
				targets = append(targets, net.JoinHostPort(ip.IP, strconv.Itoa(coreDNSHealthPort)))
			}
			g.Expect(families(ips)).To(ConsistOf(want), "Pod %s: the families of its Pod IPs %v", p.Name, ips)
		}
	}).WithContext(ctx).WithPolling(5 * time.Second).Should(Succeed())
	return targets
}

// checkReachable checks that CoreDNS's health endpoint answers "OK" at
// every target (host:port) from every node, with a command in the node's
// container.
func checkReachable(ctx context.Context, engine Engine, nodes []corev1.Node, targets []string) {
	for _, n := range nodes {
		for _, t := range targets {
			url := "http://" + t + "/health"
			Eventually(func() (string, error) {
				return execOutputErr(ctx, engine, n.Name, "curl", "-sS", "-g", "--max-time", "5", url)
			}).WithContext(ctx).WithPolling(5*time.Second).Should(Equal("OK"), "from Node %s: GET %s", n.Name, url)
		}
	}
}

// coreDNSHealthPort is the port of CoreDNS's health plugin in kubeadm's
// Corefile, which answers "OK" on /health.
const coreDNSHealthPort = 8080

// families returns the family of each address or CIDR of addrs, in
// order ("" for one that does not parse).
func families(addrs []string) []corev1.IPFamily {
	out := make([]corev1.IPFamily, 0, len(addrs))
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil {
			ip, _, _ = net.ParseCIDR(a)
		}
		switch {
		case ip == nil:
			out = append(out, "")
		case ip.To4() != nil:
			out = append(out, corev1.IPv4Protocol)
		default:
			out = append(out, corev1.IPv6Protocol)
		}
	}
	return out
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
