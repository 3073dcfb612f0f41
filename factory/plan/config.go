package plan

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/capd-e2e/capd-e2e/factory/buildspec"
	"github.com/capd-e2e/capd-e2e/framework/config"
)

// Step IDs of the steps that exist once (others are "<kind>/<version>").
const (
	IDKindBase                = "kind-base"
	IDKubeRouter              = "kube-router"
	IDHAProxy                 = "haproxy"
	IDCAPICore                = config.StepCAPICore
	IDCAPIKubeadmBootstrap    = config.StepCAPIKubeadmBootstrap
	IDCAPIKubeadmControlPlane = config.StepCAPIKubeadmControlPlane
	IDCAPD                    = config.StepCAPD
	IDCertManagerSubstitute   = "cert-manager-substitute"
)

// GoImageID returns the ID of a build.goImages step.
func GoImageID(image string) string { return "go-image/" + image }

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

// ConformanceID returns the ID of the conformance image step of a
// Kubernetes version.
func ConformanceID(kubernetesVersion string) string { return "conformance/" + kubernetesVersion }

// TestImageID returns the ID of an e2e test image step, e.g.
// "e2e-test-image/agnhost:2.66.1".
func TestImageID(nameTag string) string { return "e2e-test-image/" + nameTag }

// New makes the plan for every image the build section b describes. b
// must be valid (buildspec.Load validates).
func New(b *buildspec.Build, opts Options) (*Plan, error) {
	if opts.GoVersion == "" {
		opts.GoVersion = runtime.Version()
	}
	if opts.Arch == "" {
		opts.Arch = runtime.GOARCH
	}
	g := &graph{steps: map[string]Step{}, opts: opts}
	cfg := b.Config

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
	if b.ContainerRuntime.Source == buildspec.RuntimeFromModules {
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
	g.add(Step{ID: IDKubeRouter, Kind: KindKubeRouter, Image: b.KubeRouter.Image, Deps: deps, Published: true, Inputs: map[string]string{
		InputFrom:    from,
		InputModule:  b.KubeRouter.Path,
		InputVersion: b.KubeRouter.Version,
		InputPackage: b.KubeRouter.Path + "/cmd/kube-router",
	}}, true)

	from, deps = onRootfs(b.LoadBalancer.Rootfs)
	g.add(Step{ID: IDHAProxy, Kind: KindHAProxy, Image: b.LoadBalancer.Image, Deps: deps, Target: true, Published: true, Inputs: map[string]string{InputFrom: from}}, false)

	// Per Kubernetes version: component images first, then the node
	// images, which may preload components of other versions.
	for _, k := range b.Kubernetes {
		for _, comp := range config.KubeComponents {
			s := Step{ID: KubeComponentID(comp, k.Version), Kind: KindKubeComponent, Image: k.ComponentImage(comp), Published: true, Inputs: map[string]string{
				InputComponent: comp,
				InputModule:    buildspec.DefaultKubernetesModule,
				InputVersion:   k.Version,
				InputPackage:   buildspec.DefaultKubernetesModule + "/cmd/" + comp,
			}}
			if comp == config.KubeProxy {
				s.Inputs[InputFrom], s.Deps = onRootfs(b.KubeProxyRootfs)
			}
			g.add(s, true)
		}
		g.add(Step{ID: EtcdID(k.Etcd.Version), Kind: KindEtcd, Image: k.Etcd.Image, Published: true, Inputs: map[string]string{
			InputModule: k.Etcd.Path, InputVersion: k.Etcd.Version,
		}}, true)
		g.add(Step{ID: CoreDNSID(k.CoreDNS.Version), Kind: KindCoreDNS, Image: k.CoreDNS.Image, Published: true, Inputs: map[string]string{
			InputModule: k.CoreDNS.Path, InputVersion: k.CoreDNS.Version,
		}}, true)
		g.add(Step{ID: PauseID(k.Pause.Version), Kind: KindPause, Image: k.Pause.Image, Published: true, Inputs: map[string]string{
			InputVersion: k.Pause.Version, InputModule: buildspec.DefaultKubernetesModule, InputSource: k.Pause.Source,
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
				case buildspec.ComponentEtcd:
					deps = append(deps, EtcdID(other.Etcd.Version))
				case buildspec.ComponentCoreDNS:
					deps = append(deps, CoreDNSID(other.CoreDNS.Version))
				case buildspec.ComponentPause:
					deps = append(deps, PauseID(other.Pause.Version))
				case buildspec.ComponentKubeProxy:
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
		g.add(Step{ID: NodeID(k.Version), Kind: KindNode, Image: k.NodeImage, Deps: deps, Target: true, Published: true, Inputs: map[string]string{
			InputFrom:    b.Kind.BaseImage,
			InputModule:  buildspec.DefaultKubernetesModule,
			InputVersion: k.Version,
			InputPreload: strings.Join(preload, " "),
		}}, true)
	}

	for _, k := range b.Kubernetes {
		g.conformance(k, b.Debian.Mirror, onRootfs)
	}

	if err := g.clusterAPI(cfg); err != nil {
		return nil, err
	}

	g.add(Step{ID: IDCertManagerSubstitute, Kind: KindCertManagerSubstitute, Image: b.CertManager.SubstituteImage, Target: true, Inputs: map[string]string{
		InputCertManager: b.CertManager.String(),
	}}, true)

	for _, gi := range b.GoImages {
		if err := g.goImage(gi, rootfsImage, false); err != nil {
			return nil, err
		}
	}
	if img := b.CloudControllerManager.Image; img != "" {
		// Built from the harness's own cloudprovider module, like a
		// provider's image from its directory.
		gi := buildspec.GoImage{Image: img, Dir: cfg.CloudControllerManagerDir(), Package: config.CloudControllerManagerPackage,
			Binary: "/usr/local/bin/capd-cloud-controller-manager"}
		// Its module requires what the suite's does, at the same
		// versions: compiled as the suite is, it shares its packages.
		if err := g.goImage(gi, rootfsImage, true); err != nil {
			return nil, err
		}
	}

	if g.err != nil {
		return nil, g.err
	}
	return FromSteps(g.list(), opts)
}

// conformance adds k's conformance image and e2e test images, when k has a
// conformance section. The conformance image is compiled in k's
// Kubernetes build (its wrapper module, and kubectl from it); the test
// images from k's sources too.
func (g *graph) conformance(k buildspec.Kubernetes, mirror string, onRootfs func(string) (string, []string)) {
	c := k.Conformance
	if c == nil {
		return
	}
	from, deps := onRootfs(c.Rootfs)
	g.add(Step{ID: ConformanceID(k.Version), Kind: KindConformance, Image: c.Image, Deps: deps, Target: true, Published: true, Inputs: map[string]string{
		InputFrom: from, InputModule: buildspec.DefaultKubernetesModule, InputVersion: k.Version,
	}}, true)
	refs := k.TestImageRefs()
	for i, img := range c.TestImages {
		name, tag, _ := strings.Cut(img, ":")
		s := Step{ID: TestImageID(img), Kind: KindTestImage, Image: refs[i], Target: true, Published: true, Inputs: map[string]string{
			InputName: name, InputTag: tag, InputModule: buildspec.DefaultKubernetesModule, InputVersion: k.Version,
		}}
		switch name {
		case buildspec.TestImageKitten, buildspec.TestImageNautilus:
			// agnhost and their files on Alpine's minirootfs, as
			// upstream's are on its agnhost (an Alpine image); on no
			// Debian rootfs.
			if c.Alpine.Version == "" {
				g.err = errors.Join(g.err, fmt.Errorf("step %q: builds on Alpine's minirootfs, and build.kubernetes %s's conformance.alpine names no version", s.ID, k.Version))
				continue
			}
			s.Inputs[InputAlpine] = c.Alpine.String()
		case buildspec.TestImageBusyBox:
			// Compiled from BusyBox's release, which Debian's archive
			// serves; on no rootfs.
			s.Inputs[InputSource], s.Inputs[InputMirror] = BusyBoxRelease(tag), mirror
		default:
			s.Inputs[InputFrom], s.Deps = from, deps
		}
		g.add(s, true)
	}
}

// clusterAPI adds the active built-in providers' managers: from the module
// proxy at the release, or from the working tree in build.clusterAPI.source
// (content-addressed on the packages each manager is built from).
func (g *graph) clusterAPI(cfg *config.Config) error {
	providers := cfg.ActiveBuiltinProviders()
	src := cfg.Build.ClusterAPI.Source
	hashes := map[string]SourceInfo{}
	if src != "" {
		if g.opts.SourceHashes == nil {
			return errors.New("plan: build.clusterAPI.source is set but Options.SourceHashes is nil")
		}
		// One `go list` per module of the tree.
		byDir := map[string][]string{}
		for _, p := range providers {
			dir := filepath.Join(src, p.TreeDir)
			byDir[dir] = append(byDir[dir], p.Package)
		}
		for _, dir := range slices.Sorted(maps.Keys(byDir)) {
			h, err := g.opts.SourceHashes(dir, byDir[dir], clusterAPITags(byDir[dir][0], cfg.ClusterAPIVersion()))
			if err != nil {
				return fmt.Errorf("plan Cluster API from %s: %w", src, err)
			}
			maps.Copy(hashes, h)
		}
	}
	for _, p := range providers {
		// Cluster API publishes its releases' controllers, not the test
		// extension (only its staging registry has that).
		published := src == "" && p.StepID != config.StepCAPITestExtension
		s := Step{ID: p.StepID, Kind: KindClusterAPI, Image: p.Image, Target: true, Published: published, Inputs: map[string]string{
			InputModule: p.Module, InputVersion: cfg.ClusterAPIVersion(), InputPackage: p.Package,
		}}
		if src != "" {
			s.Dir = filepath.Join(src, p.TreeDir)
			s.Inputs[InputSourceHash] = hashes[p.Package].Hash
		} else {
			// The release the suite itself links: compiled as the suite
			// is, the managers share the packages it compiled (CAPD and
			// the test extension all but their own; the three others are
			// built with fieldsv1string, which changes apimachinery and
			// so everything above it, and share among themselves).
			s.Inputs[InputHarness] = "true"
		}
		g.add(s, true)
	}
	// The release the clusterctl-upgrade spec upgrades from: always from
	// the module proxy, and published by Cluster API.
	for _, p := range cfg.PreviousProviders() {
		g.add(Step{ID: p.StepID, Kind: KindClusterAPI, Image: p.Image, Target: true, Published: true, Inputs: map[string]string{
			InputModule: p.Module, InputVersion: cfg.Build.ClusterAPI.Previous.Version, InputPackage: p.Package,
		}}, true)
	}
	return nil
}

// clusterAPITags are the build tags of a Cluster API manager at version,
// as upstream's Dockerfiles set them: from v1.14 on, fieldsv1string for
// the main module's three; none before.
func clusterAPITags(pkg, version string) []string {
	if strings.HasPrefix(pkg, config.ClusterAPITestModule+"/") || semver.Compare(version, "v1.14.0") < 0 {
		return nil
	}
	return []string{"fieldsv1string"}
}

// ClusterAPITags is clusterAPITags for builders.
func ClusterAPITags(pkg, version string) []string { return clusterAPITags(pkg, version) }

// goImage adds a build.goImages entry; harness compiles it as the suite
// is (InputHarness).
func (g *graph) goImage(gi buildspec.GoImage, rootfsImage map[string]string, harness bool) error {
	s := Step{ID: GoImageID(gi.Image), Kind: KindGoImage, Image: gi.Image, Target: true, Inputs: map[string]string{
		InputPackage: gi.Package,
		InputBinary:  gi.Binary,
	}}
	set := func(k, v string) {
		if v != "" {
			s.Inputs[k] = v
		}
	}
	set(InputLDFlags, strings.Join(gi.LDFlags, "\n"))
	set(InputTags, strings.Join(gi.Tags, " "))
	set(InputUser, gi.User)
	if gi.CGO {
		s.Inputs[InputCGO] = "true"
	}
	if harness {
		s.Inputs[InputHarness] = "true"
	}
	if gi.Rootfs != "" {
		s.Inputs[InputFrom] = rootfsImage[gi.Rootfs]
		s.Deps = []string{RootfsID(gi.Rootfs)}
	}
	if gi.Dir != "" {
		if g.opts.SourceHashes == nil {
			return fmt.Errorf("plan %s: a local directory needs Options.SourceHashes", s.ID)
		}
		h, err := g.opts.SourceHashes(gi.Dir, []string{gi.Package}, gi.Tags)
		if err != nil {
			return fmt.Errorf("plan %s: %w", s.ID, err)
		}
		s.Dir = gi.Dir
		s.Inputs[InputSourceHash] = h[gi.Package].Hash
	} else {
		s.Inputs[InputModule] = gi.Module
		s.Inputs[InputVersion] = gi.Version
	}
	g.add(s, true)
	return nil
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

// BusyBoxRelease is the BusyBox release an e2e busybox image's tag is
// built from: the tag without its "-N" build suffix (busybox:1.37.0-2 is
// BusyBox 1.37.0).
func BusyBoxRelease(tag string) string {
	if i := strings.LastIndex(tag, "-"); i > 0 {
		if _, err := strconv.Atoi(tag[i+1:]); err == nil {
			return tag[:i]
		}
	}
	return tag
}
