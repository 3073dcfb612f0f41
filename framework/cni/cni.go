// Package cni renders the workload and management clusters' CNI:
// kube-router's generic DaemonSet from its module in the module cache,
// pinned to the image the node images preload, with its CNI configuration
// published only once it holds the node's pod range
// (PublishRangedCNIConfig), hostPorts mapped (AddPortMap) and the bridge in
// hairpin mode (EnableHairpin). The suite writes it into the clusterctl
// repository for the workload clusters (a ClusterResourceSet); the image
// factory bakes it into the node images as kind's default CNI.
//
// It reads the module cache (downloading into it) and nothing else: no
// engine, no cluster.
package cni

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/mod/module"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// KubeRouterManifestFile is kube-router's generic DaemonSet in its module:
// in-cluster service account, router and firewall on, service proxy off
// (kube-proxy stays), CNI config written by its init container.
const KubeRouterManifestFile = "daemonset/generic-kuberouter.yaml"

var (
	kubeRouterImageLine = regexp.MustCompile(`(?m)^(\s*(?:-\s+)?image:\s*)(?:docker\.io/)?cloudnativelabs/kube-router(?::[A-Za-z0-9._-]+)?[ \t]*$`)
	pullAlwaysLine      = regexp.MustCompile(`(?m)^(\s*(?:-\s+)?imagePullPolicy:\s*)Always[ \t]*$`)
)

// KubeRouterManifest returns kube-router's generic DaemonSet manifest
// (KubeRouterManifestFile) from its module at kr's version, with every
// kube-router image pinned to kr.Image and imagePullPolicy IfNotPresent, so
// the image preloaded in the node image is used, and with the CNI
// configuration published only once it holds the node's pod range
// (PublishRangedCNIConfig) and the portmap plugin added for hostPorts
// (AddPortMap), and the bridge in hairpin mode (EnableHairpin). Node
// images bake it in
// as kind's default CNI; the workload clusters get the same file through a
// ClusterResourceSet (see WriteKubeRouterManifest).
func KubeRouterManifest(ctx context.Context, kr config.KubeRouter) ([]byte, error) {
	path := kr.Path
	if path == "" {
		path = config.DefaultKubeRouterModule
	}
	info, err := gomod.Download(ctx, "", module.Version{Path: path, Version: kr.Version})
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(filepath.Join(info.Dir, filepath.FromSlash(KubeRouterManifestFile)))
	if err != nil {
		return nil, fmt.Errorf("render kube-router manifest: %w", err)
	}
	out, err := RewriteKubeRouterManifest(src, kr.Image)
	if err == nil {
		out, err = PublishRangedCNIConfig(out)
	}
	if err == nil {
		out, err = AddPortMap(out)
	}
	if err == nil {
		out, err = EnableHairpin(out)
	}
	if err != nil {
		return nil, fmt.Errorf("render kube-router manifest of %s@%s: %w", path, kr.Version, err)
	}
	return out, nil
}

// RewriteKubeRouterManifest pins every cloudnativelabs/kube-router image in
// manifest to image, turns imagePullPolicy Always into IfNotPresent and
// adds --routes-sync-period (KubeRouterRoutesSyncPeriod) after
// --run-router=true unless the manifest sets it. It is an error when no
// kube-router image or no --run-router=true argument is found.
func RewriteKubeRouterManifest(manifest []byte, image string) ([]byte, error) {
	if image == "" {
		return nil, fmt.Errorf("rewrite kube-router manifest: no image given")
	}
	if !kubeRouterImageLine.Match(manifest) {
		return nil, fmt.Errorf("rewrite kube-router manifest: no cloudnativelabs/kube-router image found")
	}
	out := kubeRouterImageLine.ReplaceAll(manifest, append([]byte("${1}"), escapeDollar(image)...))
	out = pullAlwaysLine.ReplaceAll(out, []byte("${1}IfNotPresent"))
	// kube-router peers with a node when the node is added, if the node
	// has an address then; with an external cloud provider it gets one
	// only once the cloud-controller-manager initializes it, and
	// kube-router ignores node updates. Its periodic sync (5 min by
	// default) is what adds such a peer: until then no pod of the new node
	// is reachable from the others. Sync every 10 s.
	if !bytes.Contains(out, []byte("--routes-sync-period")) {
		if !runRouterArg.Match(out) {
			return nil, fmt.Errorf("rewrite kube-router manifest: no --run-router=true argument to add --routes-sync-period after")
		}
		out = runRouterArg.ReplaceAll(out, []byte("${1}${2}\n${1}\"--routes-sync-period="+KubeRouterRoutesSyncPeriod+"\""))
	}
	// The manifest is embedded in cluster templates (ClusterResourceSet),
	// where clusterctl takes every ${NAME} for a template variable and
	// fails on the init container's shell ${TMP}: write those as $NAME,
	// which the shell reads the same when no name character follows.
	return shellBraces.ReplaceAll(out, []byte("$$${1}${2}")), nil
}

// EnableDualStack turns a manifest of RewriteKubeRouterManifest into
// kube-router's dual-stack one: after --run-router=true it adds
// --enable-ipv6=true (IPv4 stays on, kube-router's default) and the
// Service ranges of both families, which its firewall needs to match the
// families it serves (kube-router's default is one IPv4 range): the
// template variables DOCKER_SERVICE_CIDRS and DOCKER_SERVICE_IPV6_CIDRS,
// which clusterctl substitutes when it renders a dual-stack cluster's
// template, the manifest embedded in it. It is an error when the
// manifest has no --run-router=true argument or already sets a family.
func EnableDualStack(manifest []byte) ([]byte, error) {
	return addRouterArgs(manifest, "dual-stack", familyFlags,
		"--enable-ipv6=true", "--service-cluster-ip-range=${"+VarServiceCIDRs+"}", "--service-cluster-ip-range=${"+VarServiceIPv6CIDRs+"}")
}

// The template variables of the Service ranges EnableDualStack passes to
// kube-router.
const (
	VarServiceCIDRs     = "DOCKER_SERVICE_CIDRS"
	VarServiceIPv6CIDRs = "DOCKER_SERVICE_IPV6_CIDRS"
)

// KubeRouterRoutesSyncPeriod is the --routes-sync-period the rendered
// manifest gives kube-router (see RewriteKubeRouterManifest).
const KubeRouterRoutesSyncPeriod = "10s"

var runRouterArg = regexp.MustCompile(`(?m)^(\s*- )("?--run-router=true"?)[ \t]*$`)

var shellBraces = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}([^A-Za-z0-9_]|$)`)

func escapeDollar(s string) []byte { return bytes.ReplaceAll([]byte(s), []byte("$"), []byte("$$")) }

// WriteKubeRouterManifest renders KubeRouterManifest for cfg and writes it
// to path.
func WriteKubeRouterManifest(ctx context.Context, cfg *config.Config, path string) error {
	return writeManifest(ctx, cfg, path, nil)
}

// WriteKubeRouterDualStackManifest renders KubeRouterManifest for cfg,
// dual-stack (EnableDualStack), and writes it to path: the CNI of the
// dual-stack flavors.
func WriteKubeRouterDualStackManifest(ctx context.Context, cfg *config.Config, path string) error {
	return writeManifest(ctx, cfg, path, EnableDualStack)
}

// writeManifest renders KubeRouterManifest for cfg, passes it through
// edit unless nil, and writes it to path, creating its folder.
func writeManifest(ctx context.Context, cfg *config.Config, path string, edit func([]byte) ([]byte, error)) error {
	out, err := KubeRouterManifest(ctx, cfg.Build.KubeRouter)
	if err == nil && edit != nil {
		out, err = edit(out)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
