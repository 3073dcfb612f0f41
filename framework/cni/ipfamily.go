package cni

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// EnableIPv6Only turns a manifest of RewriteKubeRouterManifest into
// kube-router's IPv6-only one: after --run-router=true it adds
// --enable-ipv4=false and --enable-ipv6=true (without the first,
// kube-router stops on a node that has no IPv4 Pod range),
// --router-id=generate (kube-router derives its BGP router id from the
// node's IPv4 address, which an IPv6-only node lacks) and the IPv6
// Service range, the template variable DOCKER_SERVICE_IPV6_CIDRS, which
// clusterctl substitutes when it renders an IPv6 cluster's template. It
// is an error when the manifest has no --run-router=true argument or
// already sets a family, a router id or a Service range.
func EnableIPv6Only(manifest []byte) ([]byte, error) {
	return addRouterArgs(manifest, "IPv6-only", append(slices.Clone(familyFlags), "--router-id"),
		"--enable-ipv4=false", "--enable-ipv6=true", "--router-id=generate",
		"--service-cluster-ip-range=${"+VarServiceIPv6CIDRs+"}")
}

// familyFlags are kube-router's flags of the IP families it serves, which
// a manifest must not set already for EnableDualStack or EnableIPv6Only to
// set them.
var familyFlags = []string{"--enable-ipv6", "--enable-ipv4", "--service-cluster-ip-range"}

// addRouterArgs adds args after the manifest's --run-router=true
// argument, refusing a manifest that already sets one of refused; what
// names the manifest in errors.
func addRouterArgs(manifest []byte, what string, refused []string, args ...string) ([]byte, error) {
	for _, flag := range refused {
		if bytes.Contains(manifest, []byte(flag)) {
			return nil, fmt.Errorf("kube-router %s manifest: the manifest already sets %s", what, flag)
		}
	}
	if !runRouterArg.Match(manifest) {
		return nil, fmt.Errorf("kube-router %s manifest: no --run-router=true argument to add the IPv6 flags after", what)
	}
	repl := "${1}${2}"
	for _, a := range args {
		repl += "\n${1}\"" + strings.ReplaceAll(a, "$", "$$") + "\""
	}
	return runRouterArg.ReplaceAll(manifest, []byte(repl)), nil
}

// WriteKubeRouterIPv6Manifest renders KubeRouterManifest for cfg,
// IPv6-only (EnableIPv6Only), and writes it to path: the CNI of the ipv6
// flavor.
func WriteKubeRouterIPv6Manifest(ctx context.Context, cfg *config.Config, path string) error {
	return writeManifest(ctx, cfg, path, EnableIPv6Only)
}

// DualStackManifest is KubeRouterManifest, dual-stack (EnableDualStack),
// with the Service ranges given instead of the template variables: the
// CNI of a dual-stack cluster that clusterctl does not render, such as a
// dual-stack kind management cluster (bootstrap.KindOptions.CNIManifest).
// serviceIPv4 and serviceIPv6 must be CIDRs of their family.
func DualStackManifest(ctx context.Context, kr config.KubeRouter, serviceIPv4, serviceIPv6 string) ([]byte, error) {
	for _, r := range []struct {
		cidr string
		v4   bool
	}{{serviceIPv4, true}, {serviceIPv6, false}} {
		p, err := netip.ParsePrefix(r.cidr)
		if err != nil {
			return nil, fmt.Errorf("kube-router dual-stack manifest: Service range: %w", err)
		}
		if p.Addr().Is4() != r.v4 {
			return nil, fmt.Errorf("kube-router dual-stack manifest: Service range %q is not of the family its place wants (IPv4 first, then IPv6)", r.cidr)
		}
	}
	out, err := KubeRouterManifest(ctx, kr)
	if err == nil {
		out, err = EnableDualStack(out)
	}
	if err != nil {
		return nil, err
	}
	out = bytes.ReplaceAll(out, []byte("${"+VarServiceCIDRs+"}"), []byte(serviceIPv4))
	return bytes.ReplaceAll(out, []byte("${"+VarServiceIPv6CIDRs+"}"), []byte(serviceIPv6)), nil
}
