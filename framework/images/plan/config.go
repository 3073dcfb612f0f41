package plan

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// Step IDs of the steps that exist once (others are "<kind>/<version>").
const (
	IDKindBase                = "kind-base"
	IDKubeRouter              = "kube-router"
	IDHAProxy                 = "haproxy"
	IDCAPICore                = "cluster-api/core"
	IDCAPIKubeadmBootstrap    = "cluster-api/kubeadm-bootstrap"
	IDCAPIKubeadmControlPlane = "cluster-api/kubeadm-control-plane"
	IDCAPD                    = "cluster-api/docker"
	IDCertManagerSubstitute   = "cert-manager-substitute"
)

// RootfsID returns the ID of the rootfs step named name.
func RootfsID(name string) string { return "rootfs/" + name }

// NodeID returns the ID of the node image step of a Kubernetes version.
func NodeID(kubernetesVersion string) string { return "node/" + kubernetesVersion }

// KubeComponentID returns the ID of a kube component image step.
func KubeComponentID(component, kubernetesVersion string) string {
	return component + "/" + kubernetesVersion
}

// EtcdID returns the ID of the etcd image step of an etcd version; one
// step serves every Kubernetes version that uses it.
func EtcdID(version string) string { return "etcd/" + version }

// CoreDNSID returns the ID of the CoreDNS image step of a CoreDNS version.
func CoreDNSID(version string) string { return "coredns/" + version }

// PauseID returns the ID of the pause image step of a pause version.
func PauseID(version string) string { return "pause/" + version }

// New makes the plan for every image cfg's build section describes. cfg
// must be valid (config.Load validates).
func New(cfg *config.Config, opts Options) (*Plan, error) {
	if opts.GoVersion == "" {
		opts.GoVersion = runtime.Version()
	}
	if opts.Arch == "" {
		opts.Arch = runtime.GOARCH
	}
	g := &graph{steps: map[string]Step{}, opts: opts}
	b := &cfg.Build

	rootfsImage := map[string]string{}
	for _, r := range b.Debian.Rootfs {
		pkgs := slices.Clone(r.Packages)
		slices.Sort(pkgs) // debootstrap does not care about the order
		pkgs = slices.Compact(pkgs)
		g.add(Step{ID: RootfsID(r.Name), Kind: KindRootfs, Image: r.Image, Inputs: map[string]string{
			InputSuite:    b.Debian.Suite,
			InputMirror:   b.Debian.Mirror,
			InputVariant:  b.Debian.Variant,
			InputPackages: strings.Join(pkgs, " "),
		}}, false)
		rootfsImage[r.Name] = r.Image
	}
	onRootfs := func(name string) (string, []string) {
		return rootfsImage[name], []string{RootfsID(name)}
	}

	baseInputs := map[string]string{
		InputKind:    b.Kind.String(),
		InputRuntime: b.ContainerRuntime.Source,
		InputCrictl:  b.Crictl.String(),
	}
	if b.ContainerRuntime.Source == config.RuntimeFromModules {
		// Only then do these versions matter: with "debian" they are unused
		// and bumping them must not rebuild anything.
		baseInputs[InputContainerd] = b.ContainerRuntime.Containerd.String()
		baseInputs[InputRunc] = b.ContainerRuntime.Runc.String()
		baseInputs[InputCNIPlugins] = b.ContainerRuntime.CNIPlugins.String()
	}
	from, deps := onRootfs(b.Kind.Rootfs)
	baseInputs[InputFrom] = from
	g.add(Step{ID: IDKindBase, Kind: KindKindBase, Image: b.Kind.BaseImage, Inputs: baseInputs, Deps: deps}, true)

	from, deps = onRootfs(b.KubeRouter.Rootfs)
	g.add(Step{ID: IDKubeRouter, Kind: KindKubeRouter, Image: b.KubeRouter.Image, Deps: deps, Inputs: map[string]string{
		InputFrom:    from,
		InputModule:  b.KubeRouter.Path,
		InputVersion: b.KubeRouter.Version,
		InputPackage: b.KubeRouter.Path + "/cmd/kube-router",
	}}, true)

	from, deps = onRootfs(b.LoadBalancer.Rootfs)
	g.add(Step{ID: IDHAProxy, Kind: KindHAProxy, Image: b.LoadBalancer.Image, Deps: deps, Inputs: map[string]string{InputFrom: from}}, false)

	// Per Kubernetes version: component images first, then the node
	// images, which may preload components of other versions.
	for _, k := range b.Kubernetes {
		for _, comp := range config.KubeComponents {
			s := Step{ID: KubeComponentID(comp, k.Version), Kind: KindKubeComponent, Image: k.ComponentImage(comp), Inputs: map[string]string{
				InputComponent: comp,
				InputModule:    config.DefaultKubernetesModule,
				InputVersion:   k.Version,
				InputPackage:   config.DefaultKubernetesModule + "/cmd/" + comp,
			}}
			if comp == config.KubeProxy {
				s.Inputs[InputFrom], s.Deps = onRootfs(b.KubeProxyRootfs)
			}
			g.add(s, true)
		}
		g.add(Step{ID: EtcdID(k.Etcd.Version), Kind: KindEtcd, Image: k.Etcd.Image, Inputs: map[string]string{
			InputModule: k.Etcd.Path, InputVersion: k.Etcd.Version,
		}}, true)
		g.add(Step{ID: CoreDNSID(k.CoreDNS.Version), Kind: KindCoreDNS, Image: k.CoreDNS.Image, Inputs: map[string]string{
			InputModule: k.CoreDNS.Path, InputVersion: k.CoreDNS.Version,
		}}, true)
		g.add(Step{ID: PauseID(k.Pause.Version), Kind: KindPause, Image: k.Pause.Image, Inputs: map[string]string{
			InputVersion: k.Pause.Version, InputModule: config.DefaultKubernetesModule, InputSource: k.Pause.Source,
		}}, false)
	}
	for _, k := range b.Kubernetes {
		deps := []string{IDKindBase, IDKubeRouter, EtcdID(k.Etcd.Version), CoreDNSID(k.CoreDNS.Version), PauseID(k.Pause.Version)}
		for _, comp := range config.KubeComponents {
			deps = append(deps, KubeComponentID(comp, k.Version))
		}
		for _, pre := range k.Preload {
			other, err := b.KubernetesVersion(pre.From)
			if err != nil {
				return nil, fmt.Errorf("plan node image %s: preload: %w", k.Version, err)
			}
			for _, comp := range pre.Components {
				switch comp {
				case config.ComponentEtcd:
					deps = append(deps, EtcdID(other.Etcd.Version))
				case config.ComponentCoreDNS:
					deps = append(deps, CoreDNSID(other.CoreDNS.Version))
				case config.ComponentPause:
					deps = append(deps, PauseID(other.Pause.Version))
				case config.ComponentKubeProxy:
					deps = append(deps, KubeComponentID("kube-proxy", other.Version))
				default:
					return nil, fmt.Errorf("plan node image %s: preload: unknown component %q", k.Version, comp)
				}
			}
		}
		slices.Sort(deps)
		deps = slices.Compact(deps)
		var preload []string
		for _, d := range deps {
			if d != IDKindBase {
				preload = append(preload, g.steps[d].Image)
			}
		}
		slices.Sort(preload)
		g.add(Step{ID: NodeID(k.Version), Kind: KindNode, Image: k.NodeImage, Deps: deps, Inputs: map[string]string{
			InputFrom:    b.Kind.BaseImage,
			InputModule:  config.DefaultKubernetesModule,
			InputVersion: k.Version,
			InputPreload: strings.Join(preload, " "),
		}}, true)
	}

	capi := func(id, image, module, pkg string) {
		g.add(Step{ID: id, Kind: KindClusterAPI, Image: image, Inputs: map[string]string{
			InputModule: module, InputVersion: b.ClusterAPI.Version, InputPackage: pkg,
		}}, true)
	}
	imgs := b.ClusterAPI.Images
	capi(IDCAPICore, imgs.Core, "sigs.k8s.io/cluster-api", "sigs.k8s.io/cluster-api/core")
	capi(IDCAPIKubeadmBootstrap, imgs.KubeadmBootstrap, "sigs.k8s.io/cluster-api", "sigs.k8s.io/cluster-api/bootstrap/kubeadm")
	capi(IDCAPIKubeadmControlPlane, imgs.KubeadmControlPlane, "sigs.k8s.io/cluster-api", "sigs.k8s.io/cluster-api/controlplane/kubeadm")
	capi(IDCAPD, imgs.Docker, "sigs.k8s.io/cluster-api/test", "sigs.k8s.io/cluster-api/test/infrastructure/docker")

	g.add(Step{ID: IDCertManagerSubstitute, Kind: KindCertManagerSubstitute, Image: b.CertManager.SubstituteImage, Inputs: map[string]string{
		InputCertManager: b.CertManager.String(),
	}}, true)

	if g.err != nil {
		return nil, g.err
	}
	return FromSteps(g.list(), opts)
}

// graph collects steps; a step added twice with the same content (a pause
// image shared by two Kubernetes versions) is kept once.
type graph struct {
	steps map[string]Step
	order []string
	opts  Options
	err   error
}

func (g *graph) add(s Step, goBuilt bool) {
	s.Inputs[InputArch] = g.opts.Arch
	if goBuilt {
		s.Inputs[InputGo] = g.opts.GoVersion
	}
	if old, ok := g.steps[s.ID]; ok {
		if old.Image != s.Image || !maps.Equal(old.Inputs, s.Inputs) || !slices.Equal(old.Deps, s.Deps) {
			g.err = errors.Join(g.err, fmt.Errorf("step %q: defined twice with different inputs (%s and %s)", s.ID, old.Image, s.Image))
		}
		return
	}
	g.steps[s.ID] = s
	g.order = append(g.order, s.ID)
}

func (g *graph) list() []Step {
	out := make([]Step, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.steps[id])
	}
	return out
}
