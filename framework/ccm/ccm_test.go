package ccm

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestDeployment(t *testing.T) {
	d := Installer{Image: "capd-e2e/ccm:v1", LoadBalancerImage: "lb:v1", RunID: "r1"}.Deployment("ns", "c1", "uid-1")
	if d.Name != "c1-ccm" || d.Namespace != "ns" {
		t.Errorf("name %s/%s, want ns/c1-ccm", d.Namespace, d.Name)
	}
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "Cluster" || d.OwnerReferences[0].Name != "c1" || d.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("owner references %+v, want the Cluster c1 (uid-1)", d.OwnerReferences)
	}
	pod := d.Spec.Template.Spec
	args := pod.Containers[0].Args
	for _, want := range []string{"--cloud-provider=docker", "--cluster-name=c1", "--load-balancer-image=lb:v1", "--run-id=r1", "--v=2"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token of the management cluster; it needs none")
	}
	var secret, socket bool
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "c1-kubeconfig" && *v.Secret.DefaultMode == 0o400 {
			secret = true
		}
		if v.HostPath != nil && v.HostPath.Path == "/var/run/docker.sock" && *v.HostPath.Type == corev1.HostPathSocket {
			socket = true
		}
	}
	if !secret || !socket {
		t.Errorf("volumes %+v: kubeconfig secret (0400) %v, docker socket %v", pod.Volumes, secret, socket)
	}
	if !maps.Equal(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("selector %v does not select the template's labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}

	bare := Installer{Image: "i"}.Deployment("ns", "c1", "u")
	for _, a := range bare.Spec.Template.Spec.Containers[0].Args {
		if a == "--run-id=" || a == "--load-balancer-image=" {
			t.Errorf("unset option passed as %q", a)
		}
	}
}

func TestUninstallRemovesOnlyTheClustersLoadBalancers(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	add := func(name string, labels map[string]string) {
		f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: name, Labels: labels}})
	}
	lb := func(cluster string) map[string]string {
		return map[string]string{names.LabelCluster: cluster, runtime.LabelCreatedBy: names.Component}
	}
	add("c1-svclb-a", lb("c1"))
	add("c1-svclb-b", lb("c1"))
	add("c2-svclb-a", lb("c2"))
	add("c1-control-plane-x", map[string]string{runtime.LabelCluster: "c1"})
	// Labelled for the cluster by someone else (the leak tracker's marker,
	// say): not the manager's.
	add("c1-other", map[string]string{names.LabelCluster: "c1"})

	removed, err := Installer{Engine: f}.Uninstall(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{"c1-svclb-a", "c1-svclb-b"}) {
		t.Errorf("removed %q, want c1's two load balancers", removed)
	}
	left, _ := f.ListContainers(ctx, runtime.Filter{})
	var names []string
	for _, c := range left {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"c1-control-plane-x", "c1-other", "c2-svclb-a"}) {
		t.Errorf("left %q", names)
	}

	again, err := Installer{Engine: f}.Uninstall(ctx, "c1")
	if err != nil || len(again) != 0 {
		t.Errorf("second Uninstall = %q, %v; want nothing, no error", again, err)
	}
	if _, err := (Installer{}).Uninstall(ctx, "c1"); err == nil {
		t.Error("Uninstall without an Engine did not fail")
	}
}

var errDown = errors.New("engine down")

type downEngine struct{}

func (downEngine) ListContainers(context.Context, runtime.Filter) ([]runtime.Container, error) {
	return nil, errDown
}
func (downEngine) RemoveContainer(context.Context, string) error { return errDown }

func TestUninstallReportsAnUnreachableEngine(t *testing.T) {
	_, err := Installer{Engine: downEngine{}}.Uninstall(context.Background(), "c1")
	if !errors.Is(err, errDown) || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("Uninstall = %v, want the engine's error naming the cluster", err)
	}
}

// TestNodeIPFamilies: set families become --node-ip-families, in order;
// Install sets IPv6 alone only for a cluster whose Pod ranges are all
// IPv6.
func TestNodeIPFamilies(t *testing.T) {
	d := Installer{Image: "i", NodeIPFamilies: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}}.Deployment("ns", "c1", "u")
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--node-ip-families=IPv6,IPv4") {
		t.Errorf("args %q lack --node-ip-families=IPv6,IPv4", args)
	}
	for _, a := range (Installer{Image: "i"}).Deployment("ns", "c1", "u").Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--node-ip-families") {
			t.Errorf("no families set, yet %q is passed", a)
		}
	}
	for _, tc := range []struct {
		cidrs []string
		want  bool
	}{
		{[]string{"fd00:100:96::/48"}, true},
		{[]string{"fd00:100:96::/48", "fd00:200::/48"}, true},
		{[]string{"192.168.0.0/16"}, false},
		{[]string{"fd00:100:96::/48", "192.168.0.0/16"}, false},
		{[]string{"not-a-cidr"}, false},
		{nil, false},
	} {
		if got := ipv6Only(tc.cidrs); got != tc.want {
			t.Errorf("ipv6Only(%q) = %t, want %t", tc.cidrs, got, tc.want)
		}
	}
}
