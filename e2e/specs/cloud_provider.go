package specs

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Taints the cloud-node and cloud-node-lifecycle controllers manage.
const (
	taintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"
	taintShutdown      = "node.cloudprovider.kubernetes.io/shutdown"
)

func (r *run) installCloudControllerManager(ctx context.Context) {
	r.step("install the cloud controller manager", func() {
		Expect(r.in.CloudControllerManager.Install(ctx, r.mgmt.GetClient(), r.namespace, r.clusterName)).To(Succeed())
	})
}

// nodeInitialised says what the cloud controller manager has not done yet
// to a Node, or "" when it has done it all: the provider ID CAPD would set,
// the addresses, the instance type, region and zone labels CAPD never
// sets, and no uninitialized taint.
func nodeInitialised(n *corev1.Node) string {
	var missing []string
	if n.Spec.ProviderID != names.ProviderIDPrefix+n.Name {
		missing = append(missing, fmt.Sprintf("providerID %q", n.Spec.ProviderID))
	}
	if !slices.ContainsFunc(n.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Type == corev1.NodeInternalIP && a.Address != "" }) {
		missing = append(missing, "no InternalIP")
	}
	if t := n.Labels[corev1.LabelInstanceTypeStable]; t != names.InstanceTypeControlPlane && t != names.InstanceTypeWorker {
		missing = append(missing, fmt.Sprintf("instance type %q", t))
	}
	if n.Labels[corev1.LabelTopologyRegion] != names.Region {
		missing = append(missing, fmt.Sprintf("region %q", n.Labels[corev1.LabelTopologyRegion]))
	}
	if n.Labels[corev1.LabelTopologyZone] == "" {
		missing = append(missing, "no zone")
	}
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taintUninitialized }) {
		missing = append(missing, "uninitialized taint")
	}
	if len(missing) == 0 {
		return ""
	}
	return n.Name + ": " + strings.Join(missing, ", ")
}

// checkNodesInitialised waits until the cloud controller manager has
// initialised every Node of the workload cluster, and records what it
// set.
func (r *run) checkNodesInitialised(ctx context.Context, wl framework.ClusterProxy) {
	r.step("check the cloud controller manager initialised every Node", func() {
		c := watchClient(wl)
		nodes := &corev1.NodeList{}
		err := r.wait(c, "wait-nodes-ready", "every Node of "+r.clusterName+" initialised by the cloud controller manager", &corev1.NodeList{}).
			Until(ctx, func(ctx context.Context) (bool, string) {
				if err := c.List(ctx, nodes); err != nil {
					return false, err.Error()
				}
				var missing []string
				for i := range nodes.Items {
					if m := nodeInitialised(&nodes.Items[i]); m != "" {
						missing = append(missing, m)
					}
				}
				return len(nodes.Items) > 0 && len(missing) == 0, strings.Join(missing, "; ")
			})
		Expect(err).ToNot(HaveOccurred())
		for _, n := range nodes.Items {
			var ips []string
			for _, a := range n.Status.Addresses {
				ips = append(ips, string(a.Type)+"="+a.Address)
			}
			r.summary.Set("node "+n.Name, fmt.Sprintf("providerID %s, %s, instance-type %s, region %s, zone %s, taints %d",
				n.Spec.ProviderID, strings.Join(ips, " "), n.Labels[corev1.LabelInstanceTypeStable],
				n.Labels[corev1.LabelTopologyRegion], n.Labels[corev1.LabelTopologyZone], len(n.Spec.Taints)))
		}
	})
}

// checkLoadBalancer exposes an HTTP server (the cluster's own CoreDNS
// image, serving its health endpoint) through a Service of type
// LoadBalancer, waits for the cloud controller manager to give it an
// address, checks the address answers from the host, deletes the Service
// and checks its load balancer container is gone, then removes its
// backend (the Deployment and its ConfigMap) and waits for the pod to go.
// It asserts through g and times its phases with step, so that it can run
// beside the spec's own waits (startLoadBalancerCheck).
func (r *run) checkLoadBalancer(ctx context.Context, wl framework.ClusterProxy, g Gomega, step func(string, func())) {
	const namespace, name = "default", "capd-e2e-lb"
	c := wl.GetClient()
	timeout, poll := r.durations("wait-load-balancer")
	wc := watchClient(wl)
	lbWait := r.wait(wc, "wait-load-balancer", "an address for Service "+name, &corev1.ServiceList{}, client.InNamespace(namespace))
	var ip string
	labels := map[string]string{"app": name}
	step("a LoadBalancer Service gets an address", func() {
		// kubeadm creates CoreDNS last, possibly after the control plane
		// counts as initialized.
		coredns := &appsv1.Deployment{}
		g.Eventually(ctx, func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, coredns)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "kubeadm's CoreDNS Deployment")
		image := coredns.Spec.Template.Spec.Containers[0].Image // in every node image: nothing to pull
		objs := []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
				Data: map[string]string{"Corefile": ".:1053 {\n    health :8080\n    whoami\n}\n"}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "http", Image: image, ImagePullPolicy: corev1.PullNever,
						Args:         []string{"-conf", "/etc/coredns/Corefile"},
						Ports:        []corev1.ContainerPort{{ContainerPort: 8080}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns"}}}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}},
					Affinity:    loadBalancerBackendAffinity(),
					Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				}},
			}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeLoadBalancer,
				Selector: labels,
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
			}},
		}
		for _, o := range objs {
			g.Expect(c.Create(ctx, o)).To(Succeed(), "create %T %s", o, name)
		}
		svc := &corev1.Service{}
		err := lbWait.Until(ctx, func(ctx context.Context) (bool, string) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil {
				return false, err.Error()
			}
			for _, in := range svc.Status.LoadBalancer.Ingress {
				if in.IP != "" {
					ip = in.IP
					return true, ""
				}
			}
			return false, "no ingress address yet"
		})
		g.Expect(err).ToNot(HaveOccurred())
		r.summary.Set("load balancer address", ip)
	})
	// Kubernetes' service controller leaves nodes labelled
	// exclude-from-external-load-balancers (kubeadm's control-plane nodes) out
	// of a load balancer's backends: the address cannot answer before another
	// node is Ready. That wait is the workers', bounded by their interval;
	// the answer then gets wait-load-balancer's. (With three quick-starts at
	// once on 2 CPUs, the workers' networking came up just as a single
	// wait-load-balancer timeout, counted from here, ran out.)
	step("a node that can back the load balancer is Ready", func() {
		nodes := &corev1.NodeList{}
		err := r.wait(wc, "wait-worker-nodes", "a Ready Node without label "+corev1.LabelNodeExcludeBalancers,
			&corev1.NodeList{}, client.InNamespace("")).Until(ctx, func(ctx context.Context) (bool, string) {
			if err := c.List(ctx, nodes); err != nil {
				return false, err.Error()
			}
			return loadBalancerBackendReady(nodes.Items)
		})
		g.Expect(err).ToNot(HaveOccurred())
	})
	step("the LoadBalancer address answers from the host", func() {
		url := "http://" + net.JoinHostPort(ip, "80") + "/health"
		var body string
		hc := &http.Client{Timeout: 5 * time.Second}
		g.Eventually(ctx, func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			body = strings.TrimSpace(string(b))
			return nil
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		r.summary.Set("load balancer answer", fmt.Sprintf("GET %s: 200 %q", url, body))
		fmt.Fprintf(GinkgoWriter, "GET %s: 200 %q\n", url, body)
		pods := &corev1.PodList{}
		g.Expect(c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(labels))).To(Succeed())
		var on []string
		for _, p := range pods.Items {
			on = append(on, p.Name+" on "+p.Spec.NodeName)
		}
		r.summary.Set("load balancer backend pod", strings.Join(on, ", "))
	})
	step("deleting the Service removes its load balancer", func() {
		filter := runtime.Filter{Labels: map[string]string{names.LabelService: namespace + "/" + name, names.LabelCluster: r.clusterName}}
		before, err := r.in.Runtime.ListContainers(ctx, filter)
		g.Expect(err).ToNot(HaveOccurred())
		g.Expect(before).To(HaveLen(1), "one load balancer container serves Service %s/%s", namespace, name)
		r.summary.Set("load balancer container", before[0].Name+" ("+before[0].Image+")")
		g.Expect(c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})).To(Succeed())
		g.Eventually(ctx, func() ([]runtime.Container, error) {
			return r.in.Runtime.ListContainers(ctx, filter)
		}).WithTimeout(timeout).WithPolling(poll).Should(BeEmpty(), "the load balancer of the deleted Service is still there")
		g.Eventually(ctx, func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Service{}))
		}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the Service's finalizer was not released")
	})
	step("remove the check's backend", func() {
		// A kept cluster (make up) is left as its template made it: a pod
		// left here would be one more for every later drain to evict.
		for _, obj := range []client.Object{
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
		} {
			g.Expect(client.IgnoreNotFound(c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
		}
		g.Eventually(ctx, func() ([]corev1.Pod, error) {
			pods := &corev1.PodList{}
			err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(labels))
			return pods.Items, err
		}).WithTimeout(timeout).WithPolling(poll).Should(BeEmpty(), "the check's backend pod is still there")
	})
}

// loadBalancerBackendAffinity keeps the check's pod on a node that can back
// a load balancer (the nodes loadBalancerBackendReady looks for), so the
// traffic haproxy sends to that node's node port is served on that node.
// The check is of the cloud provider's load balancer, not of the CNI's
// routes between nodes: with the pod on kubeadm's control plane, excluded
// from load balancers, every answer crossed to it from a worker, and the
// check waited for the CNI's first route to the control plane (kube-router's
// BGP session, 0.8–12.7 s after the worker's kube-router started; see
// docs/performance.md). No taint is tolerated but the control plane's, for
// a provider whose control-plane nodes back load balancers: the pod is
// scheduled when a worker is Ready and initialised, instead of being
// started on a node whose network is not ready.
func loadBalancerBackendAffinity() *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelNodeExcludeBalancers, Operator: corev1.NodeSelectorOpDoesNotExist}},
		}}},
	}}
}

// loadBalancerBackendReady reports whether one of nodes can back a load
// balancer: Ready, and not labelled exclude-from-external-load-balancers.
// Otherwise it says why not.
func loadBalancerBackendReady(nodes []corev1.Node) (bool, string) {
	var why []string
	for _, n := range nodes {
		if _, excluded := n.Labels[corev1.LabelNodeExcludeBalancers]; excluded {
			why = append(why, n.Name+" excluded")
			continue
		}
		if nodeReady(n) {
			return true, ""
		}
		why = append(why, n.Name+" not Ready")
	}
	if len(why) == 0 {
		return false, "no nodes"
	}
	return false, strings.Join(why, ", ")
}

// nodeReady reports whether n's Ready condition is True.
func nodeReady(n corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}
