package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/capd-e2e/capd-e2e/cloudprovider/docker"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// itEnv is one integration test's engine, run id, network and cluster name.
// Everything it creates carries the run id and is removed when the test
// ends, checked by a leak check on the run id.
type itEnv struct {
	rt      *moby.Runtime
	runID   string
	cluster string
	network string
	image   string
}

func newITEnv(t testing.TB) *itEnv {
	t.Helper()
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	image, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	runID := runtime.NewRunID()
	env := &itEnv{rt: rt, runID: runID, cluster: "ccm-it-" + runID, network: "capd-e2e-ccm-" + runID, image: image}
	runtimetest.RemoveRunOnCleanup(t, rt, runID)
	if _, err := rt.CreateNetwork(ctx, env.network, runtime.RunLabels(runID, "ccm-integration-test", nil)); err != nil {
		t.Fatal(err)
	}
	return env
}

// machine runs a container that looks like a CAPD machine of cluster.
func (e *itEnv) machine(t testing.TB, name, clusterName, role string, labels map[string]string, mutate func(*runtime.ContainerSpec)) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := map[string]string{runtime.LabelCluster: clusterName, runtime.LabelRole: role}
	for k, v := range labels {
		l[k] = v
	}
	spec := runtime.ContainerSpec{
		Name: name, Image: e.image, Network: e.network,
		Labels: runtime.RunLabels(e.runID, "ccm-integration-test", l),
	}
	if mutate != nil {
		mutate(&spec)
	}
	if _, err := e.rt.RunContainer(ctx, spec); err != nil {
		t.Fatal(err)
	}
	return name
}

func (e *itEnv) cloud(t testing.TB) *docker.Cloud {
	t.Helper()
	cloud, err := docker.New(docker.Config{Runtime: e.rt, ClusterName: e.cluster, Network: e.network, RunID: e.runID})
	if err != nil {
		t.Fatal(err)
	}
	return cloud
}

// ensureLoadBalancer calls lb.EnsureLoadBalancer until it no longer asks
// to be retried (haproxy not yet listening), for up to a minute.
func ensureLoadBalancer(ctx context.Context, t testing.TB, lb cloudprovider.LoadBalancer, cluster string, svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	t.Helper()
	var st *v1.LoadBalancerStatus
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		st, err = lb.EnsureLoadBalancer(ctx, cluster, svc, nodes)
		var retry *api.RetryError
		if errors.As(err, &retry) {
			t.Logf("not yet: %v", err)
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	return st
}

func TestIntegrationInstances(t *testing.T) {
	env := newITEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := env.machine(t, env.cluster+"-cp-0", env.cluster, "control-plane", map[string]string{docker.LabelFailureDomain: "fd1"}, nil)
	md := env.machine(t, env.cluster+"-md-0", env.cluster, "worker", nil, nil)
	other := env.machine(t, "ccm-it-other-"+env.runID+"-md-0", "ccm-it-other-"+env.runID, "worker", nil, nil)
	inst, _ := env.cloud(t).InstancesV2()

	d, err := env.rt.InspectContainer(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	ip := d.Networks[env.network].IPv4
	if ip == "" {
		t.Fatalf("control plane container has no IPv4 on %s: %+v", env.network, d.Networks)
	}
	meta, err := inst.InstanceMetadata(ctx, node(cp, ""))
	if err != nil {
		t.Fatal(err)
	}
	if meta.ProviderID != "docker:////"+cp || meta.InstanceType != docker.InstanceTypeControlPlane || meta.Zone != "fd1" || meta.Region != docker.Region ||
		len(meta.NodeAddresses) == 0 || meta.NodeAddresses[0] != (v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip}) ||
		meta.NodeAddresses[len(meta.NodeAddresses)-1] != (v1.NodeAddress{Type: v1.NodeHostName, Address: cp}) {
		t.Errorf("control plane metadata = %+v, want provider ID docker:////%s, InternalIP %s", meta, cp, ip)
	}
	meta, err = inst.InstanceMetadata(ctx, node(md, "docker:////"+md))
	if err != nil {
		t.Fatal(err)
	}
	if meta.InstanceType != docker.InstanceTypeWorker || meta.Zone != docker.DefaultZone {
		t.Errorf("worker metadata = %+v", meta)
	}

	check := func(desc, name string, wantExists, wantShutdown bool) {
		t.Helper()
		exists, err := inst.InstanceExists(ctx, node(name, ""))
		if err != nil || exists != wantExists {
			t.Errorf("%s: InstanceExists = %v, %v; want %v", desc, exists, err, wantExists)
		}
		if !wantExists {
			return
		}
		shutdown, err := inst.InstanceShutdown(ctx, node(name, ""))
		if err != nil || shutdown != wantShutdown {
			t.Errorf("%s: InstanceShutdown = %v, %v; want %v", desc, shutdown, err, wantShutdown)
		}
	}
	check("running", md, true, false)
	if _, err := inst.InstanceExists(ctx, node(other, "")); err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Errorf("another cluster's container: %v, want an error", err)
	}

	if err := env.rt.Stop(ctx, md, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	check("stopped", md, true, true)
	if _, err := inst.InstanceMetadata(ctx, node(md, "")); err == nil || !strings.Contains(err.Error(), "has no address") {
		t.Errorf("metadata of a stopped machine: %v, want an error about its address", err)
	}
	if err := env.rt.Start(ctx, md); err != nil {
		t.Fatal(err)
	}
	check("started again", md, true, false)

	if err := env.rt.RemoveContainer(ctx, md); err != nil {
		t.Fatal(err)
	}
	check("removed", md, false, false)
	if _, err := inst.InstanceMetadata(ctx, node(md, "")); err == nil {
		t.Error("metadata of a removed machine succeeded")
	}
}

// TestIntegrationLoadBalancer runs the haproxy image the harness builds as a
// Service's load balancer in front of two "nodes" (test image containers
// serving their own name over HTTP on the node port) and checks, from a
// third container on the network, that traffic reaches the nodes the
// provider was given, through creation, an update and deletion, and from the
// host when the engine is local and rootful. It needs the
// haproxy image already built (make images); it fails, building nothing,
// when the image is missing.
func TestIntegrationLoadBalancer(t *testing.T) {
	env := newITEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := env.rt.InspectImage(ctx, docker.DefaultLoadBalancerImage); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("the load balancer image %s is missing: build the harness images first (make images); this test builds nothing", docker.DefaultLoadBalancerImage)
		}
		t.Fatal(err)
	}
	const nodePort = 30080
	serve := func(name string) func(*runtime.ContainerSpec) {
		return func(s *runtime.ContainerSpec) {
			s.Entrypoint = []string{"/bin/sh", "-c", fmt.Sprintf("mkdir -p /www && echo %s > /www/index.html && exec busybox httpd -f -p %d -h /www", name, nodePort)}
		}
	}
	nodeA := env.machine(t, env.cluster+"-md-a", env.cluster, "worker", nil, serve("node-a"))
	nodeB := env.machine(t, env.cluster+"-md-b", env.cluster, "worker", nil, serve("node-b"))
	client := env.machine(t, env.cluster+"-client", "none", "worker", nil, nil)
	k8sNode := func(name string) *v1.Node {
		d, err := env.rt.InspectContainer(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return readyNode(name, d.Networks[env.network].IPv4)
	}
	a, b := k8sNode(nodeA), k8sNode(nodeB)

	lb, _ := env.cloud(t).LoadBalancer()
	svc := service(tcp(80, nodePort))
	svc.UID = types.UID("00000000-0000-4000-8000-" + env.runID)
	name := docker.LoadBalancerContainerName(env.cluster, svc.UID)

	ensure := func(nodes ...*v1.Node) *v1.LoadBalancerStatus {
		t.Helper()
		return ensureLoadBalancer(ctx, t, lb, env.cluster, svc, nodes)
	}
	// responders returns which nodes answered 10 requests to the ingress IP.
	responders := func(ip string) map[string]bool {
		t.Helper()
		seen := map[string]bool{}
		for range 10 {
			// busybox nc, since the static busybox's wget crashes looking
			// up the "http" service without NSS.
			out, err := runtime.Output(ctx, env.rt, client, "sh", "-c", fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 5 %s 80`, ip))
			if err != nil {
				t.Logf("request: %v", err)
				continue
			}
			// The body, one line, comes last.
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			seen[strings.TrimSpace(lines[len(lines)-1])] = true
		}
		return seen
	}
	waitFor := func(ip string, want ...string) {
		t.Helper()
		var seen map[string]bool
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
			seen = responders(ip)
			if len(seen) != len(want) {
				return false, nil
			}
			for _, w := range want {
				if !seen[w] {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			var logs strings.Builder
			_ = env.rt.Logs(context.Background(), name, &logs, &logs)
			t.Fatalf("responders = %v, want %v: %v\nhaproxy log:\n%s", seen, want, err, logs.String())
		}
	}

	st := ensure(a)
	if len(st.Ingress) != 1 || st.Ingress[0].IP == "" {
		t.Fatalf("status = %+v", st)
	}
	ip := st.Ingress[0].IP
	waitFor(ip, "node-a")

	d, err := env.rt.InspectContainer(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Labels[docker.LabelCluster] != env.cluster || d.Labels[docker.LabelService] != "default/web" ||
		d.Labels[runtime.LabelRunID] != env.runID || d.Labels[runtime.LabelCluster] != "" || d.Networks[env.network].IPv4 != ip {
		t.Errorf("load balancer container labels %v, networks %v", d.Labels, d.Networks)
	}
	if out, err := runtime.Output(ctx, env.rt, name, "sh", "-c", "ulimit -Hn"); err != nil || strings.TrimSpace(string(out)) != "8192" {
		t.Errorf("open-file limit in the load balancer = %q, %v; want 8192", out, err)
	}
	if info, err := env.rt.Info(ctx); err == nil && !info.Rootless && strings.HasPrefix(info.Endpoint, "unix://") {
		// A local, rootful engine's networks are routed from the host.
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "80"), 5*time.Second)
		if err != nil {
			t.Errorf("the ingress IP is not reachable from the host: %v", err)
		} else {
			_ = conn.Close()
		}
	} else {
		t.Logf("not checking the ingress IP from the host: engine %+v (%v)", info, err)
	}

	if err := lb.UpdateLoadBalancer(ctx, env.cluster, svc, []*v1.Node{a, b}); err != nil {
		var retry *api.RetryError
		if !errors.As(err, &retry) {
			t.Fatal(err)
		}
		ensure(a, b)
	}
	waitFor(ip, "node-a", "node-b")
	ensure(b)
	waitFor(ip, "node-b")

	if _, exists, err := lb.GetLoadBalancer(ctx, env.cluster, svc); err != nil || !exists {
		t.Errorf("GetLoadBalancer = %v, %v", exists, err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, env.cluster, svc); err != nil {
		t.Fatal(err)
	}
	if _, err := env.rt.InspectContainer(ctx, name); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("load balancer after delete: %v", err)
	}
}
