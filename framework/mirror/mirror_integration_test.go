package mirror

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// TestIntegrationMirror serves an image of the real engine under an
// upstream name to a container on a network of its own, as the conformance
// specs do for the nodes: the mirror listens on the network's gateway, the
// container reads the image's manifest from it by that name, and
// Configure writes the hosts.toml containerd would read.
func TestIntegrationMirror(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runID := runtime.NewRunID()
	runtimetest.RemoveRunOnCleanup(t, rt, runID)

	base, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	upstream := "registry.k8s.io/capd-e2e-it/mirror:" + runID
	if err := rt.TagImage(ctx, base, upstream); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), upstream) })

	network := "capd-e2e-it-mirror-" + runID
	if _, err := rt.CreateNetwork(ctx, network, runtime.RunLabels(runID, "integration-test", nil)); err != nil {
		t.Fatal(err)
	}
	node := "capd-e2e-it-mirror-node-" + runID
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{Name: node, Image: base, Network: network, Labels: runtime.RunLabels(runID, "integration-test", nil)}); err != nil {
		t.Fatal(err)
	}
	d, err := rt.InspectContainer(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	gateway := d.Networks[network].GatewayIPv4
	if gateway == "" {
		t.Fatalf("no gateway on %s: %+v", network, d.Networks)
	}

	m, err := Start(ctx, Input{Runtime: rt, Images: []string{upstream}, Address: gateway})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}()
	url := m.Hosts()["registry.k8s.io"]
	if !strings.HasPrefix(url, "http://"+gateway+":") {
		t.Fatalf("mirror of registry.k8s.io at %q, want on the gateway %s", url, gateway)
	}

	// The node pulls the manifest by the upstream repository and tag.
	out, err := runtime.Output(ctx, rt, node, "busybox", "wget", "-q", "-O-", url+"/v2/capd-e2e-it/mirror/manifests/"+runID)
	if err != nil || !strings.Contains(string(out), `"schemaVersion"`) {
		t.Fatalf("the node could not read the manifest from the mirror: %v\n%s", err, out)
	}
	if n := m.Pulls()["registry.k8s.io/capd-e2e-it/mirror:"+runID]; n != 1 {
		t.Errorf("pulls counted: %v, want 1 of the image", m.Pulls())
	}

	// A node has /etc/containerd; the test image does not.
	if _, err := runtime.Output(ctx, rt, node, "mkdir", "-p", "/etc/containerd"); err != nil {
		t.Fatal(err)
	}
	if err := m.Configure(ctx, node); err != nil {
		t.Fatal(err)
	}
	got, err := runtime.Output(ctx, rt, node, "cat", ConfigDir+"/registry.k8s.io/hosts.toml")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != HostsTOML("registry.k8s.io", url) {
		t.Errorf("hosts.toml in the node:\n%s\nwant:\n%s", got, HostsTOML("registry.k8s.io", url))
	}
}
