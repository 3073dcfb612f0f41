package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/capd-e2e/capd-e2e/cloudprovider/docker"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

const lbImage = "kindest/haproxy:test"

// haproxyEngine is the fake runtime plus what the fake does not do for a
// load balancer: RunContainer gives the container an address on its
// network and records the spec, Kill with SIGHUP reloads a simulated
// haproxy instead of stopping the container, and Exec runs the few
// commands the provider uses (cp in and out of the config file, cat of
// /proc/net/tcp showing the ports of the loaded configuration).
type haproxyEngine struct {
	*fake.Runtime

	mu      sync.Mutex
	specs   []runtime.ContainerSpec
	files   map[string]string // container -> haproxy.cfg
	loaded  map[string]string // container -> configuration haproxy serves
	sighups int
	// dropSIGHUPs is how many SIGHUPs to lose, as a signal sent before
	// haproxy handles it is lost.
	dropSIGHUPs int
}

func newHAProxyEngine() *haproxyEngine {
	e := &haproxyEngine{Runtime: fake.New(), files: map[string]string{}, loaded: map[string]string{}}
	e.AddImage(runtime.Image{ID: "sha256:haproxy", RepoTags: []string{lbImage}})
	e.SetExec(e.exec)
	return e
}

// defaultConfig stands for the image's own configuration.
const defaultConfig = "frontend control-plane\n  bind *:6443\n"

func (e *haproxyEngine) RunContainer(ctx context.Context, spec runtime.ContainerSpec) (string, error) {
	id, err := e.Runtime.RunContainer(ctx, spec)
	if err != nil {
		return "", err
	}
	d, err := e.Runtime.InspectContainer(ctx, spec.Name)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.specs = append(e.specs, spec)
	d.Networks = map[string]runtime.NetworkEndpoint{spec.Network: {IPv4: fmt.Sprintf("172.18.0.%d", 100+len(e.specs))}}
	e.Runtime.AddContainer(fake.Container{ContainerDetails: d})
	e.files[spec.Name] = defaultConfig
	e.loaded[spec.Name] = defaultConfig
	return id, nil
}

func (e *haproxyEngine) Kill(ctx context.Context, name, signal string) error {
	if signal != "SIGHUP" {
		return e.Runtime.Kill(ctx, name, signal)
	}
	if _, err := e.Runtime.InspectContainer(ctx, name); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sighups++
	if e.dropSIGHUPs > 0 {
		e.dropSIGHUPs--
		return nil
	}
	e.loaded[name] = e.files[name]
	return nil
}

var bindPort = regexp.MustCompile(`(?m)^  bind \S*:(\d+)`)

func (e *haproxyEngine) exec(_ context.Context, name string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch cmd := strings.Join(opts.Cmd, " "); cmd {
	case "cp " + docker.HAProxyConfigPath + " /dev/stdout":
		_, _ = io.WriteString(opts.Stdout, e.files[name])
	case "cp /dev/stdin " + docker.HAProxyConfigPath:
		b, err := io.ReadAll(opts.Stdin)
		if err != nil {
			return runtime.ExecResult{}, err
		}
		e.files[name] = string(b)
	case "cat /proc/net/tcp":
		fmt.Fprintln(opts.Stdout, "  sl  local_address rem_address   st")
		for i, m := range bindPort.FindAllStringSubmatch(e.loaded[name], -1) {
			port, _ := strconv.Atoi(m[1])
			fmt.Fprintf(opts.Stdout, "%4d: 00000000:%04X 00000000:0000 0A 00000000:00000000\n", i, port)
		}
	case "cat /proc/net/tcp6":
		fmt.Fprintln(opts.Stderr, "cat: can't open '/proc/net/tcp6': No such file or directory")
		return runtime.ExecResult{ExitCode: 1}, nil
	default:
		fmt.Fprintf(opts.Stderr, "unexpected command %q", cmd)
		return runtime.ExecResult{ExitCode: 127}, nil
	}
	return runtime.ExecResult{}, nil
}

func (e *haproxyEngine) config(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.files[name]
}

func (e *haproxyEngine) counts() (runs, sighups int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.specs), e.sighups
}

func service(ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "6f1c9a3e-4b2d-4c1e-9f00-1a2b3c4d5e6f"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports},
	}
}

func tcp(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Protocol: v1.ProtocolTCP, Port: port, NodePort: nodePort}
}

func readyNode(name, ip string) *v1.Node {
	n := node(name, ProviderIDOf(name))
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}, {Type: v1.NodeHostName, Address: name}}
	return n
}

func newLB(t *testing.T, rt docker.Runtime, runID string) cloudprovider.LoadBalancer {
	t.Helper()
	cloud, err := docker.New(docker.Config{Runtime: rt, ClusterName: cluster, LoadBalancerImage: lbImage, RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	lb, ok := cloud.LoadBalancer()
	if !ok {
		t.Fatal("LoadBalancer not supported")
	}
	return lb
}

func TestLoadBalancerContainerName(t *testing.T) {
	uid := types.UID("6f1c9a3e-4b2d-4c1e-9f00-1a2b3c4d5e6f")
	if got := docker.LoadBalancerContainerName("c1", uid); got != "c1-svclb-6f1c9a3e4b2d4c1e" {
		t.Errorf("name = %q", got)
	}
	long := strings.Repeat("a", 63)
	got := docker.LoadBalancerContainerName(long, uid)
	if len(got) > 63 || !strings.HasPrefix(got, strings.Repeat("a", 40)+"-svclb-") {
		t.Errorf("name for a 63-character cluster = %q (%d characters)", got, len(got))
	}
	if got := docker.LoadBalancerContainerName("my cluster/x", uid); got != "my-cluster-x-svclb-6f1c9a3e4b2d4c1e" {
		t.Errorf("sanitized name = %q", got)
	}
	if a, b := docker.LoadBalancerContainerName("c1", uid), docker.LoadBalancerContainerName("c1", "0f1c9a3e-4b2d-4c1e-9f00-1a2b3c4d5e6f"); a == b {
		t.Errorf("two services share the name %q", a)
	}
	if a, b := docker.LoadBalancerContainerName("c1", uid), docker.LoadBalancerContainerName("c2", uid); a == b {
		t.Errorf("two clusters share the name %q", a)
	}
	// Never CAPD's own load balancer name, <cluster>-lb.
	if strings.HasSuffix(docker.LoadBalancerContainerName("c1", uid), "-lb") {
		t.Error("name looks like CAPD's load balancer")
	}
	lb := newLB(t, fake.New(), "")
	if got := lb.GetLoadBalancerName(context.Background(), cluster, service(tcp(80, 30080))); got != "c1-svclb-6f1c9a3e4b2d4c1e" {
		t.Errorf("GetLoadBalancerName = %q", got)
	}
}

func TestEnsureLoadBalancerLifecycle(t *testing.T) {
	e := newHAProxyEngine()
	lb := newLB(t, e, "run123")
	ctx := context.Background()
	svc := service(tcp(80, 30080))
	name := "c1-svclb-6f1c9a3e4b2d4c1e"

	if st, exists, err := lb.GetLoadBalancer(ctx, cluster, svc); err != nil || exists || st != nil {
		t.Fatalf("GetLoadBalancer before = %v, %v, %v; want nil, false, nil", st, exists, err)
	}

	// Create with one node.
	st, err := lb.EnsureLoadBalancer(ctx, cluster, svc, []*v1.Node{readyNode("c1-md-0", "172.18.0.3")})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Ingress) != 1 || st.Ingress[0].IP != "172.18.0.101" {
		t.Errorf("status = %+v, want ingress 172.18.0.101", st)
	}
	spec := e.specs[0]
	wantLabels := map[string]string{
		runtime.LabelRunID:     "run123",
		runtime.LabelCreatedBy: "capd-cloud-controller-manager",
		docker.LabelCluster:    "c1",
		docker.LabelService:    "default/web",
		docker.LabelServiceUID: string(svc.UID),
		// The process that created it (here the test; in a cluster the
		// manager in its container, which make clean-e2e cannot check).
		runtime.LabelOwner: runtime.ProcessOwner(),
	}
	if spec.Name != name || spec.Image != lbImage || spec.Network != "kind" || !maps.Equal(spec.Labels, wantLabels) {
		t.Errorf("container spec = %+v, want name %q, image %q, network kind, labels %v", spec, name, lbImage, wantLabels)
	}
	if _, ok := spec.Labels[runtime.LabelCluster]; ok {
		t.Errorf("load balancer carries CAPD's cluster label: %v", spec.Labels)
	}
	if !slices.Equal(spec.Ulimits, docker.DefaultLoadBalancerUlimits) {
		t.Errorf("ulimits = %v, want %v", spec.Ulimits, docker.DefaultLoadBalancerUlimits)
	}
	cfg := e.config(name)
	if !strings.Contains(cfg, "  bind *:80\n") || !strings.Contains(cfg, "  server c1-md-0 172.18.0.3:30080 check\n") {
		t.Errorf("config:\n%s", cfg)
	}
	if runs, sighups := e.counts(); runs != 1 || sighups != 1 {
		t.Errorf("runs %d, SIGHUPs %d; want 1, 1", runs, sighups)
	}

	// The same again changes nothing.
	if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, []*v1.Node{readyNode("c1-md-0", "172.18.0.3")}); err != nil {
		t.Fatal(err)
	}
	if runs, sighups := e.counts(); runs != 1 || sighups != 1 {
		t.Errorf("after a second Ensure: runs %d, SIGHUPs %d; want 1, 1", runs, sighups)
	}

	// Nodes change: three nodes, given out of order; one without an IPv4.
	nodes := []*v1.Node{readyNode("c1-md-1", "172.18.0.4"), readyNode("c1-cp-0", "172.18.0.2"), readyNode("c1-md-0", "172.18.0.3"), readyNode("c1-md-2", "fc00::5")}
	if err := lb.UpdateLoadBalancer(ctx, cluster, svc, nodes); err != nil {
		t.Fatal(err)
	}
	cfg = e.config(name)
	servers := regexp.MustCompile(`(?m)^  server .*$`).FindAllString(cfg, -1)
	want := []string{
		"  server c1-cp-0 172.18.0.2:30080 check",
		"  server c1-md-0 172.18.0.3:30080 check",
		"  server c1-md-1 172.18.0.4:30080 check",
	}
	if !slices.Equal(servers, want) || !strings.Contains(cfg, "# skipped node c1-md-2: no IPv4 InternalIP") {
		t.Errorf("servers after update = %q, want %q and c1-md-2 skipped; config:\n%s", servers, want, cfg)
	}
	if runs, sighups := e.counts(); runs != 1 || sighups != 2 {
		t.Errorf("after update: runs %d, SIGHUPs %d; want 1, 2", runs, sighups)
	}

	// A second port.
	svc.Spec.Ports = append(svc.Spec.Ports, tcp(443, 30443))
	if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nodes); err != nil {
		t.Fatal(err)
	}
	if cfg := e.config(name); !strings.Contains(cfg, "  bind *:443\n") || !strings.Contains(cfg, "  server c1-md-1 172.18.0.4:30443 check\n") {
		t.Errorf("config with two ports:\n%s", cfg)
	}

	st, exists, err := lb.GetLoadBalancer(ctx, cluster, svc)
	if err != nil || !exists || len(st.Ingress) != 1 || st.Ingress[0].IP != "172.18.0.101" {
		t.Errorf("GetLoadBalancer = %+v, %v, %v", st, exists, err)
	}

	// Delete, twice.
	for range 2 {
		if err := lb.EnsureLoadBalancerDeleted(ctx, cluster, svc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.InspectContainer(ctx, name); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("after delete: %v, want the container gone", err)
	}
	if _, exists, err := lb.GetLoadBalancer(ctx, cluster, svc); exists || err != nil {
		t.Errorf("GetLoadBalancer after delete = %v, %v", exists, err)
	}
}

func TestEnsureLoadBalancerWithoutRunIDOrNodes(t *testing.T) {
	e := newHAProxyEngine()
	lb := newLB(t, e, "")
	svc := service(tcp(80, 30080))
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.specs[0].Labels[runtime.LabelRunID]; ok {
		t.Errorf("labels %v carry a run id though none was configured", e.specs[0].Labels)
	}
	if cfg := e.config(e.specs[0].Name); strings.Contains(cfg, "  server ") || !strings.Contains(cfg, "backend tcp-80\n") {
		t.Errorf("config without nodes:\n%s", cfg)
	}
}

func TestEnsureLoadBalancerRetriesALostReload(t *testing.T) {
	e := newHAProxyEngine()
	e.dropSIGHUPs = 1
	lb := newLB(t, e, "")
	svc := service(tcp(80, 30080))
	nodes := []*v1.Node{readyNode("c1-md-0", "172.18.0.3")}

	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	var retry *api.RetryError
	if !errors.As(err, &retry) || !strings.Contains(err.Error(), "does not listen on port(s) [80]") {
		t.Fatalf("first Ensure with the reload lost: %v, want a RetryError about port 80", err)
	}
	// The configuration is in place but not served: the provider signals
	// again, without rewriting it, and asks to be called back.
	before := e.config(docker.LoadBalancerContainerName(cluster, svc.UID))
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); !errors.As(err, &retry) {
		t.Fatalf("second Ensure: %v, want a RetryError", err)
	}
	if _, sighups := e.counts(); sighups != 2 {
		t.Errorf("SIGHUPs = %d, want 2", sighups)
	}
	if after := e.config(docker.LoadBalancerContainerName(cluster, svc.UID)); after != before {
		t.Errorf("config rewritten:\n%s", after)
	}
	st, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	if err != nil || len(st.Ingress) != 1 {
		t.Fatalf("third Ensure = %+v, %v", st, err)
	}
	if _, sighups := e.counts(); sighups != 2 {
		t.Errorf("SIGHUPs = %d, want still 2", sighups)
	}
}

func TestEnsureLoadBalancerReplacesAStoppedContainer(t *testing.T) {
	e := newHAProxyEngine()
	lb := newLB(t, e, "")
	svc := service(tcp(80, 30080))
	ctx := context.Background()
	if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nil); err != nil {
		t.Fatal(err)
	}
	name := e.specs[0].Name
	e.SetState(name, runtime.ContainerState{Status: "exited", ExitCode: 1})
	st, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if runs, _ := e.counts(); runs != 2 || st.Ingress[0].IP != "172.18.0.102" {
		t.Errorf("runs %d, status %+v; want a second container", runs, st)
	}
}

func TestLoadBalancerRefusesForeignContainers(t *testing.T) {
	e := newHAProxyEngine()
	lb := newLB(t, e, "")
	svc := service(tcp(80, 30080))
	name := docker.LoadBalancerContainerName(cluster, svc.UID)
	e.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{
		Name: name, Labels: map[string]string{docker.LabelCluster: "c2", docker.LabelServiceUID: string(svc.UID)},
	}})
	ctx := context.Background()
	if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nil); err == nil || !strings.Contains(err.Error(), "is not the load balancer") {
		t.Errorf("Ensure over another cluster's container: %v", err)
	}
	if _, _, err := lb.GetLoadBalancer(ctx, cluster, svc); err == nil {
		t.Error("GetLoadBalancer of another cluster's container succeeded")
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, cluster, svc); err == nil {
		t.Error("EnsureLoadBalancerDeleted removed another cluster's container")
	}
	if _, err := e.InspectContainer(ctx, name); err != nil {
		t.Errorf("the foreign container is gone: %v", err)
	}
}

func TestEnsureLoadBalancerRejects(t *testing.T) {
	lb := newLB(t, newHAProxyEngine(), "")
	noUID := service(tcp(80, 30080))
	noUID.UID = ""
	for _, tc := range []struct {
		desc string
		svc  *v1.Service
		want string
	}{
		{"UDP", service(v1.ServicePort{Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053}), "only TCP"},
		{"mixed protocols", service(tcp(80, 30080), v1.ServicePort{Protocol: v1.ProtocolSCTP, Port: 90, NodePort: 30090}), "only TCP"},
		{"no node port", service(tcp(80, 0)), "no node port"},
		{"no ports", service(), "no ports"},
		{"no UID", noUID, "no UID"},
	} {
		if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, tc.svc, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.desc, err, tc.want)
		}
	}
}

func TestLoadBalancerEngineFailures(t *testing.T) {
	ctx := context.Background()
	svc := service(tcp(80, 30080))

	// The image is missing.
	e := newHAProxyEngine()
	cloud, err := docker.New(docker.Config{Runtime: e, ClusterName: cluster, LoadBalancerImage: "missing:1"})
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := cloud.LoadBalancer()
	if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nil); !errors.Is(err, runtime.ErrNotFound) || !strings.Contains(err.Error(), "run load balancer") {
		t.Errorf("Ensure with a missing image: %v", err)
	}

	// The engine is down.
	e = newHAProxyEngine()
	lb = newLB(t, e, "")
	_ = e.Close()
	if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nil); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("Ensure with the engine down: %v", err)
	}
	if _, exists, err := lb.GetLoadBalancer(ctx, cluster, svc); !errors.Is(err, runtime.ErrUnavailable) || exists {
		t.Errorf("Get with the engine down: %v, %v", exists, err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, cluster, svc); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("Delete with the engine down: %v", err)
	}
}

// A node the node controller has not initialized yet has no address in its
// status; the service controller will not call again when it gets one, so
// the load balancer takes the address from the node's machine container.
// A node without a container (and without an address) is left out, saying
// why.
func TestLoadBalancerUninitializedNodeGetsItsMachineAddress(t *testing.T) {
	e := newHAProxyEngine()
	e.AddContainer(machine("c1-md-0", cluster, "worker", "172.18.0.7"))
	lb := newLB(t, e, "")
	ctx := context.Background()
	svc := service(tcp(80, 30080))
	name := "c1-svclb-6f1c9a3e4b2d4c1e"

	registered := node("c1-md-0", "") // no provider ID, no addresses yet
	if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, []*v1.Node{registered, node("c1-md-9", "")}); err != nil {
		t.Fatal(err)
	}
	cfg := e.config(name)
	if !strings.Contains(cfg, "  server c1-md-0 172.18.0.7:30080 check\n") {
		t.Errorf("the registered node's machine is not a backend; config:\n%s", cfg)
	}
	if !strings.Contains(cfg, "# skipped node c1-md-9: no IPv4 InternalIP (its machine: ") {
		t.Errorf("the node without a machine is not skipped with a reason; config:\n%s", cfg)
	}
}
