package cni

import (
	"strings"
	"testing"
)

const kubeRouterDaemonSet = `    spec:
      containers:
      - name: kube-router
        image: docker.io/cloudnativelabs/kube-router
        imagePullPolicy: Always
        args:
        - "--run-router=true"
        - "--run-firewall=true"
      initContainers:
      - name: install-cni
        image: docker.io/cloudnativelabs/kube-router:v2.0.0
        imagePullPolicy: Always
`

func TestRewriteKubeRouterManifest(t *testing.T) {
	got, err := RewriteKubeRouterManifest([]byte(kubeRouterDaemonSet), "cloudnativelabs/kube-router:v2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if n := strings.Count(s, "image: cloudnativelabs/kube-router:v2.1.0\n"); n != 2 {
		t.Errorf("want both images pinned, got %d:\n%s", n, s)
	}
	if strings.Contains(s, "Always") || strings.Count(s, "imagePullPolicy: IfNotPresent") != 2 {
		t.Errorf("pull policy not rewritten:\n%s", s)
	}
	if !strings.Contains(s, "        - \"--run-router=true\"\n        - \"--routes-sync-period=10s\"\n        - \"--run-firewall=true\"\n") {
		t.Errorf("--routes-sync-period not added after --run-router=true:\n%s", s)
	}
	if _, err := RewriteKubeRouterManifest([]byte("kind: ConfigMap\n"), "x:1"); err == nil {
		t.Error("want an error for a manifest without the image")
	}
	if _, err := RewriteKubeRouterManifest([]byte("        image: cloudnativelabs/kube-router\n"), "x:1"); err == nil {
		t.Error("want an error for a manifest without --run-router=true")
	}
}

// TestEnableDualStack: the IPv6 flags and both Service ranges, as
// template variables, follow --run-router=true; a manifest that sets a
// family already, or has no router argument, is refused.
func TestEnableDualStack(t *testing.T) {
	ipv4, err := RewriteKubeRouterManifest([]byte(kubeRouterDaemonSet), "cloudnativelabs/kube-router:v2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := EnableDualStack(ipv4)
	if err != nil {
		t.Fatal(err)
	}
	want := "        - \"--run-router=true\"\n" +
		"        - \"--enable-ipv6=true\"\n" +
		"        - \"--service-cluster-ip-range=${DOCKER_SERVICE_CIDRS}\"\n" +
		"        - \"--service-cluster-ip-range=${DOCKER_SERVICE_IPV6_CIDRS}\"\n" +
		"        - \"--routes-sync-period=10s\"\n"
	if !strings.Contains(string(got), want) {
		t.Errorf("dual-stack arguments not added after --run-router=true:\n%s", got)
	}
	if _, err := EnableDualStack(got); err == nil || !strings.Contains(err.Error(), "already sets --enable-ipv6") {
		t.Errorf("EnableDualStack twice: %v; want a refusal naming the flag", err)
	}
	if _, err := EnableDualStack([]byte("kind: DaemonSet\n")); err == nil {
		t.Error("want an error for a manifest without --run-router=true")
	}
}
