package buildspec

import "github.com/capd-e2e/capd-e2e/framework/config"

// The factory's types, every field documented with its default: its part
// of the build section of config/e2e.yaml (docs/configuration.md is the
// guide to the whole file). A type that extends one of the run's
// (framework/config) embeds a pointer to it, hidden from JSON: Load points
// it at the run's view in the loaded config, so that a step reads both
// parts of an entry from one value and a change to either is seen by all.

// Build is the whole `build:` section: the run's part (embedded, read by
// framework/config) and what `make images` needs besides to build every
// image from the module proxy and Debian's archive.
type Build struct {
	// Build is the run's part: image references, Cluster API,
	// cert-manager, kustomize, the registry policy.
	*config.Build `json:"-"`

	// Config is the config the section was read from.
	Config *config.Config `json:"-"`

	// Debian says where root file systems come from.
	Debian Debian `json:"debian"`

	// Kind is the kind module whose images/base files make the node base
	// image.
	Kind Kind `json:"kind"`

	// ContainerRuntime chooses where containerd, runc and the CNI plugins
	// in the node image come from.
	ContainerRuntime ContainerRuntime `json:"containerRuntime"`

	// Crictl is sigs.k8s.io/cri-tools; its cmd/crictl goes into the base
	// image.
	Crictl config.Module `json:"crictl"`

	// KubeProxyRootfs names the Debian rootfs (Debian.Rootfs[].Name) that
	// kube-proxy images are built on: kube-proxy needs iptables/nft. If
	// unset, "net".
	KubeProxyRootfs string `json:"kubeProxyRootfs,omitempty"`

	// KubeRouter adds to the run's CNI daemon what it is built on.
	KubeRouter KubeRouter `json:"kubeRouter"`

	// LoadBalancer adds to the run's haproxy image what it is built on.
	LoadBalancer LoadBalancer `json:"loadBalancer"`

	// Kubernetes adds to each of the run's Kubernetes versions
	// (build.kubernetes, in the same order) the modules of its etcd and
	// CoreDNS, its pause source, its preloads and its conformance build.
	Kubernetes []Kubernetes `json:"kubernetes"`

	// GoImages are further images compiled from Go code, typically a
	// provider's own manager, from its module at a version or from a local
	// directory, with the same builder as Cluster API's controllers. List
	// them in the config's images too when the management cluster needs
	// them.
	GoImages []GoImage `json:"goImages,omitempty"`
}

// GoImage is an image holding one Go binary.
type GoImage struct {
	// Image is the reference the image is tagged with, e.g.
	// "example.com/my-provider/manager:dev". Required.
	Image string `json:"image"`
	// Module and Version build Package from the module proxy, in a
	// wrapper module that applies the module's own replace directives.
	// Set both, or set Dir instead.
	Module  string `json:"module,omitempty"`
	Version string `json:"version,omitempty"`
	// Dir builds Package in a local directory, inside its main module
	// (go.mod at or above it), as `go build` run there would: the code
	// under test from a working tree. Relative to the config file that
	// declares it. The image is content-addressed on the files of every
	// package of that directory's modules the binary depends on, so an
	// unchanged tree is not rebuilt.
	Dir string `json:"dir,omitempty"`
	// Package is the main package: an import path, or with Dir a path
	// relative to Dir such as "." or "./cmd/manager". Required.
	Package string `json:"package"`
	// LDFlags are extra linker flags, e.g. "-X 'example.com/p/version.gitVersion=v0.3.99'".
	LDFlags []string `json:"ldflags,omitempty"`
	// Tags are build tags.
	Tags []string `json:"tags,omitempty"`
	// CGO enables cgo; if false, a static binary.
	CGO bool `json:"cgo,omitempty"`
	// Rootfs names a debian.rootfs to build on; if unset, scratch
	// plus /tmp, /etc/passwd, /etc/group (as distroless/static).
	Rootfs string `json:"rootfs,omitempty"`
	// Binary is the binary's path in the image and the entrypoint; if
	// unset, "/manager".
	Binary string `json:"binary,omitempty"`
	// User runs the entrypoint, e.g. "65532"; if unset, root.
	User string `json:"user,omitempty"`
}

// Debian says where root file systems come from.
type Debian struct {
	// Suite is the Debian release, e.g. "trixie". Required.
	Suite string `json:"suite"`
	// Mirror is the archive URL, e.g. "http://deb.debian.org/debian".
	// Required. A mirror's packages change under the same suite; point it
	// at a snapshot to make rootfs builds reproducible.
	Mirror string `json:"mirror"`
	// Variant is debootstrap's --variant; if unset, "minbase".
	Variant string `json:"variant,omitempty"`
	// Rootfs lists the root file systems to build, each an image. At least
	// one; names must be unique.
	Rootfs []Rootfs `json:"rootfs"`
}

// Rootfs is a Debian root file system built with debootstrap and stored as
// an image, for other images to build on.
type Rootfs struct {
	// Name is how other build entries refer to it, e.g. "node". Required.
	Name string `json:"name"`
	// Image is the image reference it is stored as. Required.
	Image string `json:"image"`
	// Packages are installed on top of the variant (debootstrap --include).
	Packages []string `json:"packages,omitempty"`
}

// Kind is the kind module and the base image built from its images/base.
type Kind struct {
	// Module defaults to "sigs.k8s.io/kind"; Version (e.g. "v0.33.0") is
	// required.
	config.Module
	// BaseImage is the reference of the base image. Required.
	BaseImage string `json:"baseImage"`
	// Rootfs names the Debian rootfs the base image is built on. If unset,
	// "node".
	Rootfs string `json:"rootfs,omitempty"`
}

// Container runtime sources (ContainerRuntime.Source).
const (
	// RuntimeFromDebian takes containerd, runc and the CNI plugins from the
	// Debian rootfs (packages containerd, runc, containernetworking-plugins).
	RuntimeFromDebian = "debian"
	// RuntimeFromModules builds them from the modules in ContainerRuntime.
	RuntimeFromModules = "modules"
)

// ContainerRuntime chooses where containerd, runc and the CNI plugins come
// from.
type ContainerRuntime struct {
	// Source is "debian" or "modules". If unset, "debian" (verified to
	// work with trixie's containerd 1.7 and runc 1.1).
	Source string `json:"source,omitempty"`
	// Containerd is used when Source is "modules"; module defaults to
	// "github.com/containerd/containerd/v2".
	Containerd config.Module `json:"containerd"`
	// Runc is used when Source is "modules"; module defaults to
	// "github.com/opencontainers/runc".
	Runc config.Module `json:"runc"`
	// CNIPlugins is used when Source is "modules"; module defaults to
	// "github.com/containernetworking/plugins".
	CNIPlugins config.Module `json:"cniPlugins"`
}

// KubeRouter is the CNI daemon: the run's view and what it is built on.
type KubeRouter struct {
	*config.KubeRouter `json:"-"`
	// Rootfs names the Debian rootfs it is built on (it needs iptables and
	// ipset). If unset, "net".
	Rootfs string `json:"rootfs,omitempty"`
}

// LoadBalancer is CAPD's haproxy image: the run's view and what it is
// built on.
type LoadBalancer struct {
	*config.LoadBalancer `json:"-"`
	// Rootfs names the Debian rootfs (with the haproxy package) it is
	// built on. If unset, "haproxy".
	Rootfs string `json:"rootfs,omitempty"`
}

// Kubernetes is one Kubernetes version: the run's view (its version and
// image references) and what its images are built from.
type Kubernetes struct {
	*config.Kubernetes `json:"-"`
	// Etcd is the etcd kubeadm deploys for this version; module defaults
	// to "go.etcd.io/etcd/server/v3". Version is required, and the image's
	// tag must contain it without the leading "v".
	Etcd ComponentImage `json:"etcd"`
	// CoreDNS is the CoreDNS kubeadm deploys; module defaults to
	// "github.com/coredns/coredns". As Etcd.
	CoreDNS ComponentImage `json:"coreDNS"`
	// Pause is the sandbox image.
	Pause Pause `json:"pause"`
	// Preload bakes components of other versions into this node image, so
	// that an upgrade away from this version can run them on nodes not yet
	// upgraded (CoreDNS is rolled out before the workers are).
	Preload []Preload `json:"preload,omitempty"`
	// Conformance adds to the run's conformance section what its images
	// are built on; set exactly when the run's is.
	Conformance *Conformance `json:"conformance,omitempty"`
}

// ComponentImage is an image kubeadm deploys, built from a Go module.
type ComponentImage struct {
	*config.ComponentImage `json:"-"`
	// Module is the module path (each use gives its default) and Version
	// its version, e.g. "v3.6.8". Version is required.
	config.Module
}

// Pause is the pause (sandbox) image, compiled from pause.c.
type Pause struct {
	*config.ComponentImage `json:"-"`
	// Version is the pause version, e.g. "3.10.2". Required; the image's
	// tag must be it.
	Version string `json:"version"`
	// Source is the k8s.io/kubernetes version whose
	// build/pause/linux/pause.c is compiled. If unset, the version of the
	// Kubernetes entry. Entries sharing a pause image must agree on it, as
	// one image cannot be built from two sources.
	Source string `json:"source,omitempty"`
}

// Conformance is the build of a version's conformance image and e2e test
// images.
type Conformance struct {
	*config.Conformance `json:"-"`
	// Rootfs names the Debian rootfs the conformance image and the test
	// images are built on: it needs the tools the tests exec in their
	// pods (bash, curl, dig, nc, nginx, ...). Required.
	Rootfs string `json:"rootfs"`
	// Alpine is the module that holds Alpine Linux's minirootfs, as
	// Alpine's docker-alpine repository lays it out
	// (<arch>/alpine-minirootfs-<release>-<arch>.tar.gz, listed in
	// checksums.sha512); the module proxy serves it at a pseudo-version
	// of a release commit. kitten and nautilus are agnhost on it, as
	// upstream's are: the ImageVolume test reads Alpine's os-release
	// from kitten. Required when the test images list either; the module
	// path defaults to github.com/alpinelinux/docker-alpine.
	Alpine config.Module `json:"alpine,omitzero"`
}

// The e2e test images the image factory knows how to build (see
// factory/goimages).
const (
	TestImageAgnhost         = "agnhost"
	TestImageBusyBox         = "busybox"
	TestImageGlibcDNSTesting = "glibc-dns-testing"
	TestImageNginx           = "nginx"
	TestImageKitten          = "kitten"
	TestImageNautilus        = "nautilus"
	TestImageNonewprivs      = "nonewprivs"
	TestImageNonRoot         = "nonroot"
	TestImageSampleAPIServer = "sample-apiserver"
)

// TestImageNames lists the e2e test images the factory builds.
var TestImageNames = []string{
	TestImageAgnhost, TestImageBusyBox, TestImageGlibcDNSTesting, TestImageNginx, TestImageKitten,
	TestImageNautilus, TestImageNonewprivs, TestImageNonRoot, TestImageSampleAPIServer,
}

// Components that Preload can name.
const (
	ComponentEtcd    = "etcd"
	ComponentCoreDNS = "coredns"
	ComponentPause   = "pause"
	// ComponentKubeProxy is the other version's kube-proxy: during an
	// upgrade, the new kube-proxy DaemonSet runs on workers that still use
	// the old node image.
	ComponentKubeProxy = "kube-proxy"
)

// Preload names components of another Kubernetes entry to bake in.
type Preload struct {
	// From is the Version of another build.kubernetes entry. Required.
	From string `json:"from"`
	// Components are "etcd", "coredns", "pause" and/or "kube-proxy". At
	// least one.
	Components []string `json:"components"`
}
