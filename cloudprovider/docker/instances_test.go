package docker_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/capd-e2e/capd-e2e/cloudprovider/docker"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

const cluster = "c1"

// machine returns a running CAPD machine container of cluster on the kind
// network.
func machine(name, clusterName, role, ipv4 string) fake.Container {
	return fake.Container{ContainerDetails: runtime.ContainerDetails{
		Name:     name,
		Labels:   map[string]string{runtime.LabelCluster: clusterName, runtime.LabelRole: role},
		Networks: map[string]runtime.NetworkEndpoint{docker.DefaultNetwork: {IPv4: ipv4}},
	}}
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func newInstances(t *testing.T, rt docker.Runtime) cloudprovider.InstancesV2 {
	t.Helper()
	cloud, err := docker.New(docker.Config{Runtime: rt, ClusterName: cluster})
	if err != nil {
		t.Fatal(err)
	}
	inst, ok := cloud.InstancesV2()
	if !ok {
		t.Fatal("InstancesV2 not supported")
	}
	return inst
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := docker.New(docker.Config{ClusterName: cluster}); err == nil {
		t.Error("New without a runtime succeeded")
	}
	if _, err := docker.New(docker.Config{Runtime: fake.New()}); err == nil {
		t.Error("New without a cluster name succeeded")
	}
	if _, err := docker.New(docker.Config{Runtime: fake.New(), ClusterName: cluster,
		LoadBalancerUlimits: []runtime.Ulimit{{Name: "nofile", Soft: 2, Hard: 1}}}); err == nil {
		t.Error("New with soft > hard ulimit succeeded")
	}
	cloud, err := docker.New(docker.Config{Runtime: fake.New(), ClusterName: cluster})
	if err != nil {
		t.Fatal(err)
	}
	if cloud.ProviderName() != "docker" || !cloud.HasClusterID() {
		t.Errorf("ProviderName %q, HasClusterID %v", cloud.ProviderName(), cloud.HasClusterID())
	}
	for name, ok := range map[string]bool{
		"Instances": second(cloud.Instances()), "Zones": second(cloud.Zones()),
		"Clusters": second(cloud.Clusters()), "Routes": second(cloud.Routes()),
	} {
		if ok {
			t.Errorf("%s is supported, want not", name)
		}
	}
	if !second(cloud.LoadBalancer()) || !second(cloud.InstancesV2()) {
		t.Error("LoadBalancer or InstancesV2 not supported")
	}
}

func second[T any](_ T, ok bool) bool { return ok }

func TestInstanceExists(t *testing.T) {
	rt := fake.New()
	rt.AddContainer(machine("c1-md-0", cluster, "worker", "172.18.0.3"))
	rt.AddContainer(machine("c1-md-1", cluster, "worker", ""))
	rt.SetState("c1-md-1", runtime.ContainerState{Status: "exited"})
	rt.AddContainer(machine("c2-md-0", "c2", "worker", "172.18.0.9"))
	inst := newInstances(t, rt)
	ctx := context.Background()

	for _, tc := range []struct {
		desc    string
		node    *v1.Node
		want    bool
		wantErr string
	}{
		{desc: "running, by name", node: node("c1-md-0", ""), want: true},
		{desc: "running, by provider ID", node: node("whatever", "docker:////c1-md-0"), want: true},
		{desc: "stopped still exists", node: node("c1-md-1", ""), want: true},
		{desc: "gone, by name", node: node("c1-md-9", ""), want: false},
		{desc: "gone, by provider ID", node: node("c1-md-0", "docker:////c1-md-9"), want: false},
		{desc: "another cluster's", node: node("c2-md-0", ""), wantErr: `belongs to cluster "c2"`},
		{desc: "malformed provider ID", node: node("c1-md-0", "docker://c1-md-0"), wantErr: "parse provider ID"},
	} {
		got, err := inst.InstanceExists(ctx, tc.node)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: InstanceExists = %v, %v; want error containing %q", tc.desc, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: InstanceExists = %v, %v; want %v", tc.desc, got, err, tc.want)
		}
	}
}

// prefixEngine resolves ID prefixes as the engine does: inspecting "c1-md"
// finds container "c1-md-0".
type prefixEngine struct{ *fake.Runtime }

func (p prefixEngine) InspectContainer(ctx context.Context, nameOrID string) (runtime.ContainerDetails, error) {
	d, err := p.Runtime.InspectContainer(ctx, nameOrID)
	if errors.Is(err, runtime.ErrNotFound) {
		return p.Runtime.InspectContainer(ctx, nameOrID+"-0")
	}
	return d, err
}

func TestInstanceExistsMatchesNamesOnly(t *testing.T) {
	rt := fake.New()
	rt.AddContainer(machine("c1-md-0", cluster, "worker", "172.18.0.3"))
	inst := newInstances(t, prefixEngine{rt})
	if ok, err := inst.InstanceExists(context.Background(), node("c1-md", "")); ok || err != nil {
		t.Errorf("InstanceExists(c1-md) = %v, %v; want false, nil (c1-md-0 only matches an ID prefix)", ok, err)
	}
}

func TestInstanceExistsEngineFailureIsNotGone(t *testing.T) {
	rt := fake.New()
	rt.AddContainer(machine("c1-md-0", cluster, "worker", "172.18.0.3"))
	inst := newInstances(t, rt)
	_ = rt.Close() // every later call fails with ErrUnavailable
	for _, f := range []func(context.Context, *v1.Node) (bool, error){inst.InstanceExists, inst.InstanceShutdown} {
		ok, err := f(context.Background(), node("c1-md-0", ""))
		if err == nil || !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("with the engine down: %v, %v; want an error wrapping ErrUnavailable", ok, err)
		}
	}
	if md, err := inst.InstanceMetadata(context.Background(), node("c1-md-0", "")); err == nil || errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("InstanceMetadata with the engine down = %+v, %v; want an error that is not InstanceNotFound", md, err)
	}
}

// hangingEngine never answers before ctx ends, like an engine that hangs.
type hangingEngine struct{ *fake.Runtime }

func (hangingEngine) InspectContainer(ctx context.Context, _ string) (runtime.ContainerDetails, error) {
	<-ctx.Done()
	return runtime.ContainerDetails{}, ctx.Err()
}

func TestInstanceExistsTimeoutIsNotGone(t *testing.T) {
	cloud, err := docker.New(docker.Config{Runtime: hangingEngine{fake.New()}, ClusterName: cluster, CallTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := cloud.InstancesV2()
	ok, err := inst.InstanceExists(context.Background(), node("c1-md-0", ""))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("InstanceExists on a hanging engine = %v, %v; want the deadline's error", ok, err)
	}
}

func TestInstanceShutdown(t *testing.T) {
	rt := fake.New()
	inst := newInstances(t, rt)
	for _, tc := range []struct {
		state runtime.ContainerState
		want  bool
	}{
		{runtime.ContainerState{Status: "running", Running: true}, false},
		{runtime.ContainerState{Status: "restarting", Running: true}, false},
		{runtime.ContainerState{Status: "paused", Running: true}, true}, // the engine says Running for paused ones
		{runtime.ContainerState{Status: "exited"}, true},
		{runtime.ContainerState{Status: "created"}, true},
		{runtime.ContainerState{Status: "stopped"}, true}, // Podman
		{runtime.ContainerState{Status: "dead"}, true},
		{runtime.ContainerState{Running: true}, false}, // no status: Running decides
		{runtime.ContainerState{}, true},
	} {
		rt.AddContainer(machine("c1-md-0", cluster, "worker", "172.18.0.3"))
		rt.SetState("c1-md-0", tc.state)
		got, err := inst.InstanceShutdown(context.Background(), node("c1-md-0", ProviderIDOf("c1-md-0")))
		if err != nil || got != tc.want {
			t.Errorf("InstanceShutdown(%+v) = %v, %v; want %v", tc.state, got, err, tc.want)
		}
	}
	if _, err := inst.InstanceShutdown(context.Background(), node("c1-md-9", "")); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("InstanceShutdown of a missing container: %v, want ErrNotFound", err)
	}
}

// ProviderIDOf is docker.ProviderID, spelled out so that the tests check the
// format rather than trust the function.
func ProviderIDOf(container string) string { return "docker:////" + container }

func TestInstanceMetadata(t *testing.T) {
	rt := fake.New()
	cp := machine("c1-cp-0", cluster, "control-plane", "172.18.0.2")
	cp.Labels[docker.LabelFailureDomain] = "fd-2"
	rt.AddContainer(cp)
	rt.AddContainer(machine("c1-md-0", cluster, "worker", "172.18.0.3"))
	dual := machine("c1-md-1", cluster, "worker", "172.18.0.4")
	dual.Networks[docker.DefaultNetwork] = runtime.NetworkEndpoint{IPv4: "172.18.0.4", IPv6: "fc00:f853:ccd:e793::4"}
	dual.Networks["other"] = runtime.NetworkEndpoint{IPv4: "10.0.0.4"}
	rt.AddContainer(dual)
	inst := newInstances(t, rt)
	ctx := context.Background()

	md, err := inst.InstanceMetadata(ctx, node("c1-cp-0", ""))
	if err != nil {
		t.Fatal(err)
	}
	want := cloudprovider.InstanceMetadata{
		ProviderID:   ProviderIDOf("c1-cp-0"),
		InstanceType: docker.InstanceTypeControlPlane,
		NodeAddresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "172.18.0.2"},
			{Type: v1.NodeHostName, Address: "c1-cp-0"},
		},
		Zone:   "fd-2",
		Region: docker.Region,
	}
	if !reflect.DeepEqual(*md, want) {
		t.Errorf("control plane metadata = %+v, want %+v", *md, want)
	}

	md, err = inst.InstanceMetadata(ctx, node("c1-md-0", ProviderIDOf("c1-md-0")))
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceType != docker.InstanceTypeWorker || md.Zone != docker.DefaultZone || md.Region != "docker" ||
		md.ProviderID != "docker:////c1-md-0" {
		t.Errorf("worker metadata = %+v", *md)
	}

	md, err = inst.InstanceMetadata(ctx, node("c1-md-1", ""))
	if err != nil {
		t.Fatal(err)
	}
	wantAddrs := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "172.18.0.4"},
		{Type: v1.NodeInternalIP, Address: "fc00:f853:ccd:e793::4"},
		{Type: v1.NodeHostName, Address: "c1-md-1"},
	}
	if !slices.Equal(md.NodeAddresses, wantAddrs) {
		t.Errorf("dual-stack addresses = %v, want %v (the other network's is not one)", md.NodeAddresses, wantAddrs)
	}

	// The values must be ones CAPD never sets, and valid label values.
	for _, v := range []string{docker.InstanceTypeControlPlane, docker.InstanceTypeWorker, docker.Region, docker.DefaultZone} {
		if v == "" || strings.ContainsAny(v, "/ ") {
			t.Errorf("%q is not a usable label value", v)
		}
	}
}

// TestInstanceMetadataNodeIPFamilies: the node's InternalIPs are of the
// configured families, in their order: an IPv6-only cluster's nodes get
// their IPv6 address alone, an IPv6-first cluster's both, IPv6 first, and
// a machine with no address of the families is an error naming them.
// Families that are not IPv4 or IPv6, or given twice, are refused.
func TestInstanceMetadataNodeIPFamilies(t *testing.T) {
	rt := fake.New()
	dual := machine("c1-md-1", cluster, "worker", "172.18.0.4")
	dual.Networks[docker.DefaultNetwork] = runtime.NetworkEndpoint{IPv4: "172.18.0.4", IPv6: "fc00:f853:ccd:e793::4"}
	rt.AddContainer(dual)
	rt.AddContainer(machine("c1-md-2", cluster, "worker", "172.18.0.5"))
	ipv4 := v1.NodeAddress{Type: v1.NodeInternalIP, Address: "172.18.0.4"}
	ipv6 := v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fc00:f853:ccd:e793::4"}
	host := v1.NodeAddress{Type: v1.NodeHostName, Address: "c1-md-1"}
	for _, tc := range []struct {
		families []v1.IPFamily
		want     []v1.NodeAddress
	}{
		{[]v1.IPFamily{v1.IPv6Protocol}, []v1.NodeAddress{ipv6, host}},
		{[]v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}, []v1.NodeAddress{ipv6, ipv4, host}},
		{[]v1.IPFamily{v1.IPv4Protocol}, []v1.NodeAddress{ipv4, host}},
		{nil, []v1.NodeAddress{ipv4, ipv6, host}},
	} {
		cloud, err := docker.New(docker.Config{Runtime: rt, ClusterName: cluster, NodeIPFamilies: tc.families})
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := cloud.InstancesV2()
		md, err := inst.InstanceMetadata(context.Background(), node("c1-md-1", ""))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(md.NodeAddresses, tc.want) {
			t.Errorf("families %v: addresses = %v, want %v", tc.families, md.NodeAddresses, tc.want)
		}
		if tc.families != nil && tc.families[0] == v1.IPv6Protocol && len(tc.families) == 1 {
			_, err := inst.InstanceMetadata(context.Background(), node("c1-md-2", ""))
			if err == nil || !strings.Contains(err.Error(), "has no address on network \"kind\" yet (node IP families: IPv6)") {
				t.Errorf("IPv6-only, a machine with an IPv4 address only: %v; want an error naming IPv6", err)
			}
		}
	}
	for _, bad := range [][]v1.IPFamily{{"IPv5"}, {v1.IPv6Protocol, v1.IPv6Protocol}} {
		if _, err := docker.New(docker.Config{Runtime: rt, ClusterName: cluster, NodeIPFamilies: bad}); err == nil {
			t.Errorf("New with node IP families %v: no error", bad)
		}
	}
}

func TestInstanceMetadataErrors(t *testing.T) {
	rt := fake.New()
	rt.AddContainer(machine("c1-md-0", cluster, "worker", "")) // running, no address yet
	rt.AddContainer(machine("c1-md-1", cluster, "worker", ""))
	rt.SetState("c1-md-1", runtime.ContainerState{Status: "exited"}) // the engine drops a stopped container's address
	off := machine("c1-md-2", cluster, "worker", "")
	off.Networks = map[string]runtime.NetworkEndpoint{"bridge": {IPv4: "172.17.0.5"}}
	rt.AddContainer(off)
	rt.AddContainer(machine("c1-lb", cluster, "external-load-balancer", "172.18.0.8"))
	rt.AddContainer(machine("c2-md-0", "c2", "worker", "172.18.0.9"))
	badFD := machine("c1-md-3", cluster, "worker", "172.18.0.7")
	badFD.Labels[docker.LabelFailureDomain] = "not a label value!"
	rt.AddContainer(badFD)
	inst := newInstances(t, rt)

	for _, tc := range []struct {
		desc, node, providerID, want string
	}{
		{"running without an address yet", "c1-md-0", "", `has no address on network "kind" yet`},
		{"exited", "c1-md-1", "", "(exited) has no address"},
		{"not on the network", "c1-md-2", "", `not attached to network "kind"`},
		{"CAPD's load balancer is no machine", "c1-lb", "", `role "external-load-balancer"`},
		{"another cluster's", "c2-md-0", "", `belongs to cluster "c2"`},
		{"failure domain that is no label value", "c1-md-3", "", "cannot be a zone label"},
		{"malformed provider ID", "c1-md-0", "docker:/c1-md-0", "parse provider ID"},
		{"missing", "c1-md-9", "", "not found"},
	} {
		md, err := inst.InstanceMetadata(context.Background(), node(tc.node, tc.providerID))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: InstanceMetadata = %+v, %v; want an error containing %q", tc.desc, md, err, tc.want)
		}
	}
	_, err := inst.InstanceMetadata(context.Background(), node("c1-md-9", ""))
	if !errors.Is(err, cloudprovider.InstanceNotFound) || !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("missing container: %v, want InstanceNotFound and ErrNotFound", err)
	}
}
