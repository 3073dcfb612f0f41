//go:build images

package nodeimage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindlog "sigs.k8s.io/kind/pkg/log"

	"github.com/capd-e2e/capd-e2e/factory/kindbase"
	"github.com/capd-e2e/capd-e2e/factory/nodeimage"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// specName is this test's name in config/e2e.yaml intervals
// ("test-images/<key>", falling back to "default/<key>").
const specName = "test-images"

// echoPort is where the server pod (CoreDNS's whoami, the only server
// among the preloaded images) listens, unprivileged.
const echoPort = 8053

// TestIntegrationTwoNodeKindCluster boots a control plane and a worker
// from the node image of KUBERNETES_VERSION with kind as a library and
// shows the node image works as a cluster: nodes Ready, CoreDNS running,
// a pod on the worker reaching a pod on the control plane node by pod IP
// (kube-router's routes between nodes) and a Service by its DNS name
// (CoreDNS and kube-proxy). It then deletes the cluster and checks that no
// container of it is left.
func TestIntegrationTwoNodeKindCluster(t *testing.T) {
	cfg, rt := imageTest(t)
	k := defaultKubernetes(t, cfg)
	requireImage(t, rt, k.NodeImage)
	nodesTimeout, nodesPoll, err := cfg.Intervals(specName, "wait-nodes-ready")
	if err != nil {
		t.Fatal(err)
	}
	podsTimeout, podsPoll, err := cfg.Intervals(specName, "wait-controllers")
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	kc := createKindCluster(t, rt, "capd-e2e-it-", k.NodeImage, &v1alpha4.Cluster{Nodes: []v1alpha4.Node{
		{Role: v1alpha4.ControlPlaneRole}, {Role: v1alpha4.WorkerRole},
	}})
	t.Cleanup(kc.delete)
	cs := kc.cs
	t.Logf("cluster %s created from %s in %s", kc.name, k.NodeImage, kc.created.Round(time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), nodesTimeout+3*podsTimeout)
	defer cancel()

	// Nodes Ready.
	var controlPlane, worker string
	err = pollUntil(ctx, nodesTimeout, nodesPoll, func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var notReady []string
		for _, n := range nodes.Items {
			if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; ok {
				controlPlane = n.Name
			} else {
				worker = n.Name
			}
			if !nodeReady(n) {
				notReady = append(notReady, n.Name)
			}
		}
		if len(nodes.Items) != 2 || len(notReady) > 0 {
			return false, fmt.Sprintf("%d nodes, not ready: %v", len(nodes.Items), notReady)
		}
		return true, ""
	})
	if err != nil {
		t.Fatalf("nodes: %v", err)
	}
	t.Logf("nodes Ready after %s: control plane %s, worker %s", time.Since(start).Round(time.Second), controlPlane, worker)
	checkNodeLayout(ctx, t, rt, controlPlane)

	// CoreDNS running.
	err = pollUntil(ctx, podsTimeout, podsPoll, func() (bool, string) {
		return podsReady(ctx, cs, "kube-system", "k8s-app=kube-dns")
	})
	if err != nil {
		t.Fatalf("CoreDNS: %v", err)
	}
	t.Logf("CoreDNS running after %s", time.Since(start).Round(time.Second))

	// CoreDNS's pods exist before kube-router has the node's range: with
	// the configuration published only once it holds one
	// (cni.PublishRangedCNIConfig) they wait unscheduled instead of
	// failing in the CNI plugin and backing off.
	events, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreatePodSandBox"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, "no IP ranges specified") {
			t.Errorf("%s/%s: %d sandboxes failed before the node had its range: %s", e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Count, e.Message)
		}
	}

	// A server pod on the control plane node, behind a Service.
	ns := "bootcheck"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns, Labels: map[string]string{"app": "echo"}},
		Spec: corev1.PodSpec{
			NodeName:    controlPlane,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "whoami", Image: k.CoreDNS.Image, ImagePullPolicy: corev1.PullIfNotPresent,
				// Without a Corefile CoreDNS serves its whoami plugin.
				Args:  []string{"-dns.port", fmt.Sprint(echoPort)},
				Ports: []corev1.ContainerPort{{ContainerPort: echoPort, Protocol: corev1.ProtocolTCP}},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "echo"},
			Ports:    []corev1.ServicePort{{Port: echoPort, TargetPort: intstr.FromInt32(echoPort), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var serverIP string
	err = pollUntil(ctx, podsTimeout, podsPoll, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		serverIP = p.Status.PodIP
		return podReady(*p) && serverIP != "", fmt.Sprintf("phase %s, IP %q", p.Status.Phase, serverIP)
	})
	if err != nil {
		t.Fatalf("server pod: %v", err)
	}

	// A client pod on the worker: TCP to the server's pod IP, then DNS for
	// the Service and TCP through it. Both retry briefly, bounded, while
	// kube-router's routes and kube-proxy's rules settle.
	fqdn := "echo." + ns + ".svc.cluster.local" // kind's cluster domain
	script := fmt.Sprintf(`set -u
try() { for i in $(seq 1 30); do if timeout 5 bash -c "$1"; then echo "$2 (attempt $i)"; return 0; fi; sleep 2; done; echo "FAILED: $2"; return 1; }
try 'exec 3<>/dev/tcp/%[1]s/%[2]d' 'pod IP %[1]s:%[2]d reachable from the worker' || exit 1
try 'getent hosts %[3]s' 'service name %[3]s resolves' || exit 1
try 'exec 3<>/dev/tcp/%[3]s/%[2]d' 'service %[3]s:%[2]d reachable' || exit 1
`, serverIP, echoPort, fqdn)
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:      worker,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				// The kube-router image: a Debian rootfs with bash, getent
				// and timeout.
				Name: "client", Image: cfg.Build.KubeRouter.Image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"bash", "-c", script},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	err = pollUntil(ctx, podsTimeout, podsPoll, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, string(phase)
	})
	logs, logErr := cs.CoreV1().Pods(ns).GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || logErr != nil || phase != corev1.PodSucceeded {
		t.Fatalf("client pod on %s: phase %s, wait: %v, logs (%v):\n%s", worker, phase, err, logErr, logs)
	}
	t.Logf("client pod on %s, server pod %s on %s:\n%s", worker, serverIP, controlPlane, strings.TrimSpace(string(logs)))

	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

// checkNodeLayout checks, in a running node, what keeps machine creation
// and boot short: containerd's content store is the link to the image's
// copy (nodeimage.ContentStorePath), which the control plane's pods came
// from, and the first-boot units (kindbase.FirstBootUnits) are masked and
// never ran.
func checkNodeLayout(ctx context.Context, t *testing.T, rt runtime.Runtime, node string) {
	t.Helper()
	script := fmt.Sprintf(`set -eu
[ "$(readlink %[1]s)" = %[2]s ] || { echo "%[1]s is not a link to %[2]s"; exit 1; }
n=$(find %[2]s/blobs -type f | wc -l)
[ "$n" -gt 0 ] || { echo "no blobs in %[2]s"; exit 1; }
echo "$n blobs in %[2]s"
for u in %[3]s; do
	[ "$(systemctl is-enabled "$u" || true)" = masked ] || { echo "$u is not masked"; exit 1; }
	[ "$(systemctl show -P ActiveEnterTimestampMonotonic "$u")" = 0 ] || { echo "$u ran"; exit 1; }
done
echo "masked, never ran: %[3]s"
`, nodeimage.ContainerdContentPath, nodeimage.ContentStorePath, strings.Join(kindbase.FirstBootUnits, " "))
	var out strings.Builder
	res, err := rt.Exec(ctx, node, runtime.ExecOptions{Cmd: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("node %s: %v", node, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("node %s: exit %d: %s", node, res.ExitCode, out.String())
	}
	t.Logf("node %s: %s", node, strings.TrimSpace(out.String()))
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podsReady(ctx context.Context, cs kubernetes.Interface, ns, selector string) (bool, string) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return false, err.Error()
	}
	var status []string
	ready := len(pods.Items) > 0
	for _, p := range pods.Items {
		status = append(status, fmt.Sprintf("%s=%s", p.Name, p.Status.Phase))
		ready = ready && podReady(p)
	}
	return ready, strings.Join(status, ", ")
}

// pollUntil calls check every interval until it returns true, ctx ends or
// timeout passes; the error carries check's last status.
func pollUntil(ctx context.Context, timeout, interval time.Duration, check func() (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, status := check()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done after %s: %s", timeout, status)
		case <-tick.C:
		}
	}
}

// testLogger sends kind's messages to the test log.
type testLogger struct{ t testing.TB }

var _ kindlog.Logger = testLogger{}

func (l testLogger) Warn(message string)                      { l.t.Log("kind: WARN: " + message) }
func (l testLogger) Warnf(format string, args ...any)         { l.t.Logf("kind: WARN: "+format, args...) }
func (l testLogger) Error(message string)                     { l.t.Log("kind: ERROR: " + message) }
func (l testLogger) Errorf(format string, args ...any)        { l.t.Logf("kind: ERROR: "+format, args...) }
func (l testLogger) V(level kindlog.Level) kindlog.InfoLogger { return infoLogger{l.t, level == 0} }

type infoLogger struct {
	t       testing.TB
	enabled bool
}

func (l infoLogger) Info(message string) {
	if l.enabled {
		l.t.Log("kind: " + message)
	}
}

func (l infoLogger) Infof(format string, args ...any) {
	if l.enabled {
		l.t.Logf("kind: "+format, args...)
	}
}

func (l infoLogger) Enabled() bool { return l.enabled }
