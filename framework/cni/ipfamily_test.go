package cni

import (
	"context"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// TestEnableIPv6Only: IPv4 off, IPv6 on, a generated router id and the
// IPv6 Service range, as a template variable, follow --run-router=true; a
// manifest that sets a family already, or has no router argument, is
// refused.
func TestEnableIPv6Only(t *testing.T) {
	ipv4, err := RewriteKubeRouterManifest([]byte(kubeRouterDaemonSet), "cloudnativelabs/kube-router:v2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := EnableIPv6Only(ipv4)
	if err != nil {
		t.Fatal(err)
	}
	want := "        - \"--run-router=true\"\n" +
		"        - \"--enable-ipv4=false\"\n" +
		"        - \"--enable-ipv6=true\"\n" +
		"        - \"--router-id=generate\"\n" +
		"        - \"--service-cluster-ip-range=${DOCKER_SERVICE_IPV6_CIDRS}\"\n" +
		"        - \"--routes-sync-period=10s\"\n"
	if !strings.Contains(string(got), want) {
		t.Errorf("IPv6-only arguments not added after --run-router=true:\n%s", got)
	}
	if strings.Contains(string(got), "${"+VarServiceCIDRs+"}") {
		t.Errorf("the IPv4 Service range is in an IPv6-only manifest:\n%s", got)
	}
	dual, err := EnableDualStack(ipv4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnableIPv6Only(dual); err == nil || !strings.Contains(err.Error(), "already sets --enable-ipv6") {
		t.Errorf("EnableIPv6Only on a dual-stack manifest: %v; want a refusal naming the flag", err)
	}
	if _, err := EnableIPv6Only([]byte("kind: DaemonSet\n")); err == nil || !strings.Contains(err.Error(), "--run-router=true") {
		t.Errorf("EnableIPv6Only without a router argument: %v; want an error naming --run-router=true", err)
	}
}

// TestDualStackManifestRanges: ranges of the wrong family, in the wrong
// order, or not CIDRs are refused before anything is rendered.
func TestDualStackManifestRanges(t *testing.T) {
	for _, tc := range []struct{ v4, v6, want string }{
		{"fd00:10:96::/112", "10.96.0.0/16", "not of the family"},
		{"10.96.0.0/16", "10.97.0.0/16", "not of the family"},
		{"10.96.0.0", "fd00:10:96::/112", "Service range"},
		{"", "fd00:10:96::/112", "Service range"},
	} {
		_, err := DualStackManifest(context.Background(), config.KubeRouter{}, tc.v4, tc.v6)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DualStackManifest(%q, %q): %v; want an error with %q", tc.v4, tc.v6, err, tc.want)
		}
	}
}

// TestDualStackManifest renders the management cluster's dual-stack CNI
// from the repository's config (kube-router's module, from the module
// cache or the proxy): both Service ranges given as values, no template
// variable left for a renderer that will not come.
func TestDualStackManifest(t *testing.T) {
	cfg, err := config.Load("../../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := DualStackManifest(context.Background(), cfg.Build.KubeRouter, "10.96.0.0/16", "fd00:10:96::/112")
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{`"--enable-ipv6=true"`, `"--service-cluster-ip-range=10.96.0.0/16"`, `"--service-cluster-ip-range=fd00:10:96::/112"`} {
		if !strings.Contains(s, want) {
			t.Errorf("the manifest lacks %s", want)
		}
	}
	if strings.Contains(s, "${") {
		t.Errorf("a template variable is left in the manifest:\n%s", s)
	}
}
