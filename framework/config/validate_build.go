package config

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Checks of the build section: every image the build makes, its inputs,
// and that no two steps make the same image from different inputs.

// producer records which field builds an image reference, and from what.
type producer struct {
	field    string
	identity string // equal identities may share a reference
}

func (b *Build) validate(e *errs) {
	// Debian.
	e.required("build.debian.suite", b.Debian.Suite)
	if e.required("build.debian.mirror", b.Debian.Mirror) &&
		!strings.HasPrefix(b.Debian.Mirror, "http://") && !strings.HasPrefix(b.Debian.Mirror, "https://") &&
		!strings.HasPrefix(b.Debian.Mirror, "file://") {
		e.add("build.debian.mirror", "%q is not an http(s):// or file:// URL", b.Debian.Mirror)
	}
	if len(b.Debian.Rootfs) == 0 {
		e.add("build.debian.rootfs", "at least one rootfs is required")
	}
	rootfs := map[string]Rootfs{}
	for i, r := range b.Debian.Rootfs {
		f := fmt.Sprintf("build.debian.rootfs[%d]", i)
		if e.required(f+".name", r.Name) {
			if _, dup := rootfs[r.Name]; dup {
				e.add(f+".name", "duplicate rootfs %q", r.Name)
			}
			rootfs[r.Name] = r
		}
		e.ref(f+".image", r.Image)
		for j, p := range r.Packages {
			if strings.TrimSpace(p) == "" || strings.ContainsAny(p, " ,") {
				e.add(fmt.Sprintf("%s.packages[%d]", f, j), "%q is not a package name", p)
			}
		}
	}
	hasRootfs := func(field, name string) {
		if _, ok := rootfs[name]; !ok && e.required(field, name) {
			e.add(field, "no build.debian.rootfs is named %q", name)
		}
	}

	// Base image and its runtime.
	e.version("build.kind.version", b.Kind.Version)
	e.ref("build.kind.baseImage", b.Kind.BaseImage)
	hasRootfs("build.kind.rootfs", b.Kind.Rootfs)
	switch rt := b.ContainerRuntime; rt.Source {
	case RuntimeFromModules:
		e.version("build.containerRuntime.containerd.version", rt.Containerd.Version)
		e.version("build.containerRuntime.runc.version", rt.Runc.Version)
		e.version("build.containerRuntime.cniPlugins.version", rt.CNIPlugins.Version)
		if r, ok := rootfs[b.Kind.Rootfs]; ok {
			for _, p := range []string{"containerd", "runc"} {
				if slices.Contains(r.Packages, p) {
					e.add("build.containerRuntime.source", "%q builds %s, but rootfs %q installs Debian's package %q too: leave it out", rt.Source, p, r.Name, p)
				}
			}
		}
	case RuntimeFromDebian:
		if r, ok := rootfs[b.Kind.Rootfs]; ok {
			for _, p := range []string{"containerd", "runc", "containernetworking-plugins"} {
				if !slices.Contains(r.Packages, p) {
					e.add("build.containerRuntime.source", "%q needs package %q in rootfs %q", rt.Source, p, r.Name)
				}
			}
		}
	default:
		e.add("build.containerRuntime.source", "%q is not %s or %s", rt.Source, RuntimeFromDebian, RuntimeFromModules)
	}
	e.version("build.crictl.version", b.Crictl.Version)
	hasRootfs("build.kubeProxyRootfs", b.KubeProxyRootfs)
	e.version("build.kubeRouter.version", b.KubeRouter.Version)
	e.ref("build.kubeRouter.image", b.KubeRouter.Image)
	hasRootfs("build.kubeRouter.rootfs", b.KubeRouter.Rootfs)

	// Kubernetes versions.
	if len(b.Kubernetes) == 0 {
		e.add("build.kubernetes", "at least one Kubernetes version is required")
	}
	versions := map[string]int{}
	for i, k := range b.Kubernetes {
		f := fmt.Sprintf("build.kubernetes[%d]", i)
		e.version(f+".version", k.Version)
		if j, dup := versions[k.Version]; dup && k.Version != "" {
			e.add(f+".version", "%s is also build.kubernetes[%d]", k.Version, j)
		}
		versions[k.Version] = i
		e.ref(f+".nodeImage", k.NodeImage)
		e.required(f+".imageRepository", k.ImageRepository)
		componentImage(e, f+".etcd", k.Etcd)
		componentImage(e, f+".coreDNS", k.CoreDNS)
		e.required(f+".pause.version", k.Pause.Version)
		e.ref(f+".pause.image", k.Pause.Image)
		if k.Pause.Version != "" && tagOf(k.Pause.Image) != "" && tagOf(k.Pause.Image) != k.Pause.Version {
			e.add(f+".pause.image", "tag %q is not the version %q", tagOf(k.Pause.Image), k.Pause.Version)
		}
		e.version(f+".pause.source", k.Pause.Source)
		if c := k.Conformance; c != nil {
			e.ref(f+".conformance.image", c.Image)
			hasRootfs(f+".conformance.rootfs", c.Rootfs)
			if c.Alpine.Version != "" {
				e.version(f+".conformance.alpine.version", c.Alpine.Version)
			}
			if len(c.TestImages) == 0 {
				e.add(f+".conformance.testImages", "at least one is required")
			}
			for n, img := range c.TestImages {
				name, tag, ok := strings.Cut(img, ":")
				if !ok || tag == "" || strings.ContainsAny(tag, ":/@") {
					e.add(fmt.Sprintf("%s.conformance.testImages[%d]", f, n), "%q is not <name>:<tag>", img)
				} else if !slices.Contains(TestImageNames, name) {
					e.add(fmt.Sprintf("%s.conformance.testImages[%d]", f, n), "%q: the factory builds no test image %q (it builds %s)", img, name, strings.Join(TestImageNames, ", "))
				} else if (name == TestImageKitten || name == TestImageNautilus) && c.Alpine.Version == "" {
					*e = append(*e, field.Required(field.NewPath(f+".conformance.alpine.version"), fmt.Sprintf("testImages[%d] %q is built on Alpine's minirootfs", n, img)))
				}
			}
		}
	}
	for i, k := range b.Kubernetes {
		for j, p := range k.Preload {
			f := fmt.Sprintf("build.kubernetes[%d].preload[%d]", i, j)
			if _, ok := versions[p.From]; !ok && e.required(f+".from", p.From) {
				e.add(f+".from", "no build.kubernetes entry has version %q", p.From)
			}
			if p.From == k.Version {
				e.add(f+".from", "names its own entry")
			}
			if len(p.Components) == 0 {
				e.add(f+".components", "at least one of %s, %s, %s, %s is required", ComponentEtcd, ComponentCoreDNS, ComponentPause, ComponentKubeProxy)
			}
			for n, comp := range p.Components {
				if comp != ComponentEtcd && comp != ComponentCoreDNS && comp != ComponentPause && comp != ComponentKubeProxy {
					e.add(fmt.Sprintf("%s.components[%d]", f, n), "%q is not %s, %s, %s or %s", comp, ComponentEtcd, ComponentCoreDNS, ComponentPause, ComponentKubeProxy)
				}
			}
		}
	}

	// Other images.
	e.ref("build.loadBalancer.image", b.LoadBalancer.Image)
	hasRootfs("build.loadBalancer.rootfs", b.LoadBalancer.Rootfs)
	e.version("build.clusterAPI.version", b.ClusterAPI.Version)
	e.ref("build.clusterAPI.images.core", b.ClusterAPI.Images.Core)
	e.ref("build.clusterAPI.images.kubeadmBootstrap", b.ClusterAPI.Images.KubeadmBootstrap)
	e.ref("build.clusterAPI.images.kubeadmControlPlane", b.ClusterAPI.Images.KubeadmControlPlane)
	e.ref("build.clusterAPI.images.docker", b.ClusterAPI.Images.Docker)
	if b.ClusterAPI.Images.TestExtension != "" {
		e.ref("build.clusterAPI.images.testExtension", b.ClusterAPI.Images.TestExtension)
	}
	if p := b.ClusterAPI.Previous; p != nil {
		validatePrevious(e, p, b.ClusterAPI.Version)
	}
	e.version("build.certManager.version", b.CertManager.Version)
	e.ref("build.certManager.substituteImage", b.CertManager.SubstituteImage)
	e.version("build.kustomize.version", b.Kustomize.Version)

	if b.CloudControllerManager.Image != "" {
		e.ref("build.cloudControllerManager.image", b.CloudControllerManager.Image)
	}
	for i, g := range b.GoImages {
		f := fmt.Sprintf("build.goImages[%d]", i)
		e.ref(f+".image", g.Image)
		e.required(f+".package", g.Package)
		switch {
		case g.Dir != "" && (g.Module != "" || g.Version != ""):
			e.add(f, "set either dir or module and version, not both")
		case g.Dir != "":
			if st, err := os.Stat(g.Dir); err != nil || !st.IsDir() {
				e.add(f+".dir", "%q is not a directory", g.Dir)
			}
		default:
			e.required(f+".module", g.Module)
			e.version(f+".version", g.Version)
		}
		if g.Rootfs != "" {
			hasRootfs(f+".rootfs", g.Rootfs)
		}
		if !strings.HasPrefix(g.Binary, "/") {
			e.add(f+".binary", "%q is not an absolute path", g.Binary)
		}
	}

	policy := func(field, p string) {
		if p != PolicyBuild && p != PolicyPull && p != PolicyPullElseBuild {
			e.add(field, "%q is not %s, %s or %s", p, PolicyBuild, PolicyPull, PolicyPullElseBuild)
		}
	}
	policy(b.field("build.registry.policy", EnvImagePolicy), b.Registry.Policy)
	for _, k := range slices.Sorted(maps.Keys(b.Registry.Policies)) {
		policy(fmt.Sprintf("build.registry.policies[%s]", k), b.Registry.Policies[k])
	}
	registry := func(field, r string) {
		if r != "" && !registryRE.MatchString(r) {
			e.add(field, "%q is not a registry such as 127.0.0.1:5001 or mirror.example.com/k8s", r)
		}
	}
	registry(b.field("build.registry.mirror", EnvImageMirror), b.Registry.Mirror)
	registry(b.field("build.registry.publish", EnvImagePublish), b.Registry.Publish)

	b.validateCollisions(e)
}

// registryRE is a registry host with an optional port and path.
var registryRE = regexp.MustCompile(`^[a-zA-Z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$`)

// field names a build field, with the environment variable that set it.
func (b *Build) field(name, env string) string {
	if v := os.Getenv(env); v != "" {
		return name + " (" + env + ")"
	}
	return name
}

func componentImage(e *errs, field string, c ComponentImage) {
	e.version(field+".version", c.Version)
	e.ref(field+".image", c.Image)
	if t, v := tagOf(c.Image), strings.TrimPrefix(c.Version, "v"); t != "" && v != "" && !strings.Contains(t, v) {
		e.add(field+".image", "tag %q does not contain the version %q", t, v)
	}
}

// validateCollisions rejects two build entries producing the same image
// reference from different inputs: the second build would overwrite the
// first. Kubernetes entries sharing an etcd, CoreDNS or pause image with the
// same inputs are fine; the image is built once.
func (b *Build) validateCollisions(e *errs) {
	seen := map[string]producer{}
	add := func(field, ref, identity string) {
		if ref == "" {
			return
		}
		if p, ok := seen[ref]; ok {
			if p.identity != identity {
				e.add(field, "image %q is also built by %s from other inputs", ref, p.field)
			}
			return
		}
		seen[ref] = producer{field: field, identity: identity}
	}
	for i, r := range b.Debian.Rootfs {
		add(fmt.Sprintf("build.debian.rootfs[%d].image", i), r.Image, "rootfs "+r.Name)
	}
	add("build.kind.baseImage", b.Kind.BaseImage, "base")
	add("build.kubeRouter.image", b.KubeRouter.Image, "kube-router")
	for i, k := range b.Kubernetes {
		f := fmt.Sprintf("build.kubernetes[%d]", i)
		add(f+".nodeImage", k.NodeImage, "node "+k.Version)
		for _, comp := range KubeComponents {
			add(f+".imageRepository", k.ComponentImage(comp), comp+" "+k.Version)
		}
		add(f+".etcd.image", k.Etcd.Image, "etcd "+k.Etcd.String())
		add(f+".coreDNS.image", k.CoreDNS.Image, "coredns "+k.CoreDNS.String())
		add(f+".pause.image", k.Pause.Image, "pause "+k.Pause.Version+" from "+k.Pause.Source)
		if k.Conformance != nil {
			add(f+".conformance.image", k.Conformance.Image, "conformance "+k.Version)
			// Built from this version's sources: another version's entry
			// must not name the same one.
			for n, ref := range k.TestImageRefs() {
				add(fmt.Sprintf("%s.conformance.testImages[%d]", f, n), ref, "test image from "+k.Version+" on "+k.Conformance.Rootfs)
			}
		}
	}
	add("build.loadBalancer.image", b.LoadBalancer.Image, "haproxy")
	add("build.clusterAPI.images.core", b.ClusterAPI.Images.Core, "capi core")
	add("build.clusterAPI.images.kubeadmBootstrap", b.ClusterAPI.Images.KubeadmBootstrap, "capi bootstrap")
	add("build.clusterAPI.images.kubeadmControlPlane", b.ClusterAPI.Images.KubeadmControlPlane, "capi control plane")
	add("build.clusterAPI.images.docker", b.ClusterAPI.Images.Docker, "capd")
	if b.ClusterAPI.Images.TestExtension != "" {
		add("build.clusterAPI.images.testExtension", b.ClusterAPI.Images.TestExtension, "capi test extension")
	}
	if p := b.ClusterAPI.Previous; p != nil && semver.IsValid(p.Version) {
		imgs := b.ClusterAPI.Images
		for _, i := range []struct{ field, ref string }{
			{"core", imgs.Core}, {"kubeadmBootstrap", imgs.KubeadmBootstrap}, {"kubeadmControlPlane", imgs.KubeadmControlPlane}, {"docker", imgs.Docker},
		} {
			if i.ref != "" {
				add("build.clusterAPI.previous.version", WithTag(i.ref, p.Version), "capi "+i.field+" "+p.Version)
			}
		}
	}
	add("build.certManager.substituteImage", b.CertManager.SubstituteImage, "cert-manager substitute")
	for i, g := range b.GoImages {
		add(fmt.Sprintf("build.goImages[%d].image", i), g.Image, fmt.Sprintf("go image %d", i))
	}
	add("build.cloudControllerManager.image", b.CloudControllerManager.Image, "cloud controller manager")
}

// MinPreviousClusterAPI is the oldest release build.clusterAPI.previous may
// name: the first whose CAPD serves the Dev* kinds the harness's templates
// use.
const MinPreviousClusterAPI = "v1.13.0"

// validatePrevious checks build.clusterAPI.previous against the version
// under test (current; a working tree's is checked at load, where it is
// derived).
func validatePrevious(e *errs, p *PreviousClusterAPI, current string) {
	const f = "build.clusterAPI.previous"
	e.version(f+".version", p.Version)
	if semver.IsValid(p.Version) {
		switch {
		case semver.Compare(p.Version, MinPreviousClusterAPI) < 0:
			e.add(f+".version", "%q is older than %s, the first release whose CAPD serves the Dev* kinds of the harness's templates", p.Version, MinPreviousClusterAPI)
		case semver.IsValid(current) && semver.Major(p.Version) != semver.Major(current):
			e.add(f+".version", "%q is not of the major of build.clusterAPI.version %q", p.Version, current)
		case semver.IsValid(current) && semver.Compare(p.Version, current) >= 0:
			e.add(f+".version", "%q is not older than build.clusterAPI.version %q: clusterctl upgrade goes from it to the version under test", p.Version, current)
		}
	}
	if c := p.Clusterctl; c != "" {
		if u, err := url.Parse(c); err != nil || !IsNetworkSource(c) || u.Host == "" {
			e.add(f+".clusterctl", "%q is not an http(s) URL with a host (leave it unset to build clusterctl %s from the module proxy)", c, p.Version)
		}
	}
}
