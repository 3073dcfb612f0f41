// Package buildspec is the image factory's part of the config's `build:`
// section: how each image is built (Debian root file systems, kind's base
// image, the container runtime, the modules of etcd and CoreDNS, the pause
// source, preloads, the conformance build, Go images), with its defaults
// and checks. framework/config reads the run's part of the same section
// (the image references, Cluster API, cert-manager, the registry policy)
// and leaves these keys to this package (config.FactoryKeys), so that a
// provider's suite, which imports framework/config, carries nothing of the
// factory.
package buildspec

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// Default module paths, used where the section leaves "module" unset.
const (
	DefaultKindModule       = "sigs.k8s.io/kind"
	DefaultContainerdModule = "github.com/containerd/containerd/v2"
	DefaultRuncModule       = "github.com/opencontainers/runc"
	DefaultCNIPluginsModule = "github.com/containernetworking/plugins"
	DefaultCrictlModule     = "sigs.k8s.io/cri-tools"
	DefaultKubernetesModule = "k8s.io/kubernetes"
	DefaultEtcdModule       = "go.etcd.io/etcd/server/v3"
	DefaultCoreDNSModule    = "github.com/coredns/coredns"
	DefaultAlpineModule     = "github.com/alpinelinux/docker-alpine"
)

// Other defaults.
const (
	DefaultDebianVariant = "minbase"
	DefaultNodeRootfs    = "node"
	DefaultNetRootfs     = "net"
	DefaultHAProxyRootfs = "haproxy"
	DefaultGoImageBinary = "/manager"
)

// Load reads the factory's part of cfg's build section (config.Load has
// read, merged and checked the run's), joins it to the run's view, fills in
// the defaults and checks it. A misspelt key is an error, as in
// config.Load; so is every problem found, each naming its field.
func Load(cfg *config.Config) (*Build, error) {
	b := &Build{}
	data, err := json.Marshal(cfg.FactoryBuild())
	if err != nil {
		return nil, fmt.Errorf("load build section of %s: %w", cfg.Path(), err)
	}
	if err := yaml.UnmarshalStrict(data, b); err != nil {
		return nil, fmt.Errorf("load build section of %s: build: %w", cfg.Path(), err)
	}
	if err := b.join(cfg); err != nil {
		return nil, fmt.Errorf("load build section of %s: %w", cfg.Path(), err)
	}
	b.Default()
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("load build section of %s: %w", cfg.Path(), err)
	}
	return b, nil
}

// join points the embedded run's views at cfg's.
func (b *Build) join(cfg *config.Config) error {
	run := &cfg.Build
	b.Build, b.Config = run, cfg
	b.KubeRouter.KubeRouter = &run.KubeRouter
	b.LoadBalancer.LoadBalancer = &run.LoadBalancer
	if b.Kubernetes == nil {
		b.Kubernetes = make([]Kubernetes, len(run.Kubernetes))
	}
	if len(b.Kubernetes) != len(run.Kubernetes) {
		return fmt.Errorf("build.kubernetes: %d entries, but the run's view has %d", len(b.Kubernetes), len(run.Kubernetes))
	}
	for i := range b.Kubernetes {
		k, r := &b.Kubernetes[i], &run.Kubernetes[i]
		k.Kubernetes = r
		k.Etcd.ComponentImage = &r.Etcd
		k.CoreDNS.ComponentImage = &r.CoreDNS
		k.Pause.ComponentImage = &r.Pause
		switch {
		case r.Conformance != nil && k.Conformance == nil:
			k.Conformance = &Conformance{}
		case r.Conformance == nil && k.Conformance != nil:
			return fmt.Errorf("build.kubernetes[%d].conformance: set for the factory but not in the run's view", i)
		}
		if r.Conformance != nil {
			k.Conformance.Conformance = r.Conformance
		}
	}
	return nil
}

// Default fills in every unset field that has a default (see the fields'
// doc comments). Load calls it.
func (b *Build) Default() {
	setIfEmpty(&b.Debian.Variant, DefaultDebianVariant)
	setIfEmpty(&b.Kind.Path, DefaultKindModule)
	setIfEmpty(&b.Kind.Rootfs, DefaultNodeRootfs)
	setIfEmpty(&b.ContainerRuntime.Source, RuntimeFromDebian)
	setIfEmpty(&b.ContainerRuntime.Containerd.Path, DefaultContainerdModule)
	setIfEmpty(&b.ContainerRuntime.Runc.Path, DefaultRuncModule)
	setIfEmpty(&b.ContainerRuntime.CNIPlugins.Path, DefaultCNIPluginsModule)
	setIfEmpty(&b.Crictl.Path, DefaultCrictlModule)
	setIfEmpty(&b.KubeProxyRootfs, DefaultNetRootfs)
	setIfEmpty(&b.KubeRouter.Rootfs, DefaultNetRootfs)
	setIfEmpty(&b.LoadBalancer.Rootfs, DefaultHAProxyRootfs)
	for i := range b.Kubernetes {
		k := &b.Kubernetes[i]
		setIfEmpty(&k.Etcd.Path, DefaultEtcdModule)
		setIfEmpty(&k.CoreDNS.Path, DefaultCoreDNSModule)
		setIfEmpty(&k.Pause.Source, k.Version)
		if c := k.Conformance; c != nil {
			setIfEmpty(&c.Alpine.Path, DefaultAlpineModule)
		}
	}
	for i := range b.GoImages {
		setIfEmpty(&b.GoImages[i].Binary, DefaultGoImageBinary)
	}
}

func setIfEmpty(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// KubernetesVersion returns the build.kubernetes entry for version, found
// as the run's view finds it (the leading "v" may be omitted).
func (b *Build) KubernetesVersion(version string) (*Kubernetes, error) {
	run, err := b.Build.KubernetesVersion(version)
	if err != nil {
		return nil, err
	}
	for i := range b.Kubernetes {
		if b.Kubernetes[i].Kubernetes == run {
			return &b.Kubernetes[i], nil
		}
	}
	return nil, fmt.Errorf("build.kubernetes: the entry for version %q is not joined to the factory's", version)
}

// LoadFile is config.Load of the config file at path followed by Load.
func LoadFile(path string) (*Build, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return Load(cfg)
}
