package buildspec

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// Validate checks the factory's part of the build section, and that no two
// steps build the same image reference from different inputs, and returns
// every problem found, each a *field.Error naming the field (joined, one
// per line), or nil. It expects defaults to be filled in (Load does). The
// run's part is config.Validate's.
func (b *Build) Validate() error {
	var e config.Errors
	// Debian.
	e.Required("build.debian.suite", b.Debian.Suite)
	if e.Required("build.debian.mirror", b.Debian.Mirror) &&
		!strings.HasPrefix(b.Debian.Mirror, "http://") && !strings.HasPrefix(b.Debian.Mirror, "https://") &&
		!strings.HasPrefix(b.Debian.Mirror, "file://") {
		e.Add("build.debian.mirror", "%q is not an http(s):// or file:// URL", b.Debian.Mirror)
	}
	if len(b.Debian.Rootfs) == 0 {
		e.Add("build.debian.rootfs", "at least one rootfs is required")
	}
	rootfs := map[string]Rootfs{}
	for i, r := range b.Debian.Rootfs {
		f := fmt.Sprintf("build.debian.rootfs[%d]", i)
		if e.Required(f+".name", r.Name) {
			if _, dup := rootfs[r.Name]; dup {
				e.Add(f+".name", "duplicate rootfs %q", r.Name)
			}
			rootfs[r.Name] = r
		}
		e.Ref(f+".image", r.Image)
		for j, p := range r.Packages {
			if strings.TrimSpace(p) == "" || strings.ContainsAny(p, " ,") {
				e.Add(fmt.Sprintf("%s.packages[%d]", f, j), "%q is not a package name", p)
			}
		}
	}
	hasRootfs := func(field, name string) {
		if _, ok := rootfs[name]; !ok && e.Required(field, name) {
			e.Add(field, "no build.debian.rootfs is named %q", name)
		}
	}

	// Base image and its runtime.
	e.Version("build.kind.version", b.Kind.Version)
	e.Ref("build.kind.baseImage", b.Kind.BaseImage)
	hasRootfs("build.kind.rootfs", b.Kind.Rootfs)
	switch rt := b.ContainerRuntime; rt.Source {
	case RuntimeFromModules:
		e.Version("build.containerRuntime.containerd.version", rt.Containerd.Version)
		e.Version("build.containerRuntime.runc.version", rt.Runc.Version)
		e.Version("build.containerRuntime.cniPlugins.version", rt.CNIPlugins.Version)
		if r, ok := rootfs[b.Kind.Rootfs]; ok {
			for _, p := range []string{"containerd", "runc"} {
				if slices.Contains(r.Packages, p) {
					e.Add("build.containerRuntime.source", "%q builds %s, but rootfs %q installs Debian's package %q too: leave it out", rt.Source, p, r.Name, p)
				}
			}
		}
	case RuntimeFromDebian:
		if r, ok := rootfs[b.Kind.Rootfs]; ok {
			for _, p := range []string{"containerd", "runc", "containernetworking-plugins"} {
				if !slices.Contains(r.Packages, p) {
					e.Add("build.containerRuntime.source", "%q needs package %q in rootfs %q", rt.Source, p, r.Name)
				}
			}
		}
	default:
		e.Add("build.containerRuntime.source", "%q is not %s or %s", rt.Source, RuntimeFromDebian, RuntimeFromModules)
	}
	e.Version("build.crictl.version", b.Crictl.Version)
	hasRootfs("build.kubeProxyRootfs", b.KubeProxyRootfs)
	hasRootfs("build.kubeRouter.rootfs", b.KubeRouter.Rootfs)
	hasRootfs("build.loadBalancer.rootfs", b.LoadBalancer.Rootfs)

	// Kubernetes versions.
	versions := map[string]bool{}
	for _, k := range b.Kubernetes {
		versions[k.Version] = true
	}
	for i, k := range b.Kubernetes {
		f := fmt.Sprintf("build.kubernetes[%d]", i)
		componentImage(&e, f+".etcd", k.Etcd)
		componentImage(&e, f+".coreDNS", k.CoreDNS)
		e.Required(f+".pause.version", k.Pause.Version)
		if t := config.ImageTag(k.Pause.Image); k.Pause.Version != "" && t != "" && t != k.Pause.Version {
			e.Add(f+".pause.image", "tag %q is not the version %q", t, k.Pause.Version)
		}
		e.Version(f+".pause.source", k.Pause.Source)
		if c := k.Conformance; c != nil {
			hasRootfs(f+".conformance.rootfs", c.Rootfs)
			if c.Alpine.Version != "" {
				e.Version(f+".conformance.alpine.version", c.Alpine.Version)
			}
			for n, img := range c.TestImages {
				name, _, _ := strings.Cut(img, ":")
				switch {
				case !slices.Contains(TestImageNames, name):
					e.Add(fmt.Sprintf("%s.conformance.testImages[%d]", f, n), "%q: the factory builds no test image %q (it builds %s)", img, name, strings.Join(TestImageNames, ", "))
				case (name == TestImageKitten || name == TestImageNautilus) && c.Alpine.Version == "":
					e = append(e, field.Required(field.NewPath(f+".conformance.alpine.version"), fmt.Sprintf("testImages[%d] %q is built on Alpine's minirootfs", n, img)))
				}
			}
		}
		for j, p := range k.Preload {
			pf := fmt.Sprintf("%s.preload[%d]", f, j)
			if !versions[p.From] && e.Required(pf+".from", p.From) {
				e.Add(pf+".from", "no build.kubernetes entry has version %q", p.From)
			}
			if p.From == k.Version {
				e.Add(pf+".from", "names its own entry")
			}
			if len(p.Components) == 0 {
				e.Add(pf+".components", "at least one of %s, %s, %s, %s is required", ComponentEtcd, ComponentCoreDNS, ComponentPause, ComponentKubeProxy)
			}
			for n, comp := range p.Components {
				if comp != ComponentEtcd && comp != ComponentCoreDNS && comp != ComponentPause && comp != ComponentKubeProxy {
					e.Add(fmt.Sprintf("%s.components[%d]", pf, n), "%q is not %s, %s, %s or %s", comp, ComponentEtcd, ComponentCoreDNS, ComponentPause, ComponentKubeProxy)
				}
			}
		}
	}

	for i, g := range b.GoImages {
		f := fmt.Sprintf("build.goImages[%d]", i)
		e.Ref(f+".image", g.Image)
		e.Required(f+".package", g.Package)
		switch {
		case g.Dir != "" && (g.Module != "" || g.Version != ""):
			e.Add(f, "set either dir or module and version, not both")
		case g.Dir != "":
			if st, err := os.Stat(g.Dir); err != nil || !st.IsDir() {
				e.Add(f+".dir", "%q is not a directory", g.Dir)
			}
		default:
			e.Required(f+".module", g.Module)
			e.Version(f+".version", g.Version)
		}
		if g.Rootfs != "" {
			hasRootfs(f+".rootfs", g.Rootfs)
		}
		if !strings.HasPrefix(g.Binary, "/") {
			e.Add(f+".binary", "%q is not an absolute path", g.Binary)
		}
	}

	b.validateCollisions(&e)
	return e.Err()
}

func componentImage(e *config.Errors, field string, c ComponentImage) {
	e.Version(field+".version", c.Version)
	if t, v := config.ImageTag(c.Image), strings.TrimPrefix(c.Version, "v"); t != "" && v != "" && !strings.Contains(t, v) {
		e.Add(field+".image", "tag %q does not contain the version %q", t, v)
	}
}

// producer records which field builds an image reference, and from what.
type producer struct {
	field    string
	identity string // equal identities may share a reference
}

// validateCollisions rejects two build entries producing the same image
// reference from different inputs: the second build would overwrite the
// first. Kubernetes entries sharing an etcd, CoreDNS or pause image with the
// same inputs are fine; the image is built once.
func (b *Build) validateCollisions(e *config.Errors) {
	seen := map[string]producer{}
	add := func(field, ref, identity string) {
		if ref == "" {
			return
		}
		if p, ok := seen[ref]; ok {
			if p.identity != identity {
				e.Add(field, "image %q is also built by %s from other inputs", ref, p.field)
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
		for _, comp := range config.KubeComponents {
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
	c := b.ClusterAPI
	add("build.clusterAPI.images.core", c.Images.Core, "capi core")
	add("build.clusterAPI.images.kubeadmBootstrap", c.Images.KubeadmBootstrap, "capi bootstrap")
	add("build.clusterAPI.images.kubeadmControlPlane", c.Images.KubeadmControlPlane, "capi control plane")
	add("build.clusterAPI.images.docker", c.Images.Docker, "capd")
	if c.Images.TestExtension != "" {
		add("build.clusterAPI.images.testExtension", c.Images.TestExtension, "capi test extension")
	}
	if p := c.Previous; p != nil && semver.IsValid(p.Version) {
		for _, i := range []struct{ field, ref string }{
			{"core", c.Images.Core}, {"kubeadmBootstrap", c.Images.KubeadmBootstrap}, {"kubeadmControlPlane", c.Images.KubeadmControlPlane}, {"docker", c.Images.Docker},
		} {
			if i.ref != "" {
				add("build.clusterAPI.previous.version", config.WithTag(i.ref, p.Version), "capi "+i.field+" "+p.Version)
			}
		}
	}
	add("build.certManager.substituteImage", b.CertManager.SubstituteImage, "cert-manager substitute")
	for i, g := range b.GoImages {
		add(fmt.Sprintf("build.goImages[%d].image", i), g.Image, fmt.Sprintf("go image %d", i))
	}
	add("build.cloudControllerManager.image", b.CloudControllerManager.Image, "cloud controller manager")
}
