package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"
)

// Default module paths, used where the config leaves "module" unset.
const (
	DefaultKindModule       = "sigs.k8s.io/kind"
	DefaultContainerdModule = "github.com/containerd/containerd/v2"
	DefaultRuncModule       = "github.com/opencontainers/runc"
	DefaultCNIPluginsModule = "github.com/containernetworking/plugins"
	DefaultCrictlModule     = "sigs.k8s.io/cri-tools"
	DefaultKubeRouterModule = "github.com/cloudnativelabs/kube-router/v2"
	DefaultKubernetesModule = "k8s.io/kubernetes"
	DefaultEtcdModule       = "go.etcd.io/etcd/server/v3"
	DefaultCoreDNSModule    = "github.com/coredns/coredns"
	DefaultCertManager      = "github.com/cert-manager/cert-manager"
	DefaultKustomizeModule  = "sigs.k8s.io/kustomize/kustomize/v5"
)

// Other defaults of the build section.
const (
	DefaultOutputDir       = "../out"
	DefaultDebianVariant   = "minbase"
	DefaultImageRepository = "registry.k8s.io"
	DefaultNodeRootfs      = "node"
	DefaultNetRootfs       = "net"
	DefaultHAProxyRootfs   = "haproxy"
)

// Load reads the config file at path, fills in defaults and validates it.
// Relative paths in it resolve against the file's directory. The error of a
// config that does not validate lists every problem, each naming its field.
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	c, err := parse(data, abs)
	if err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	return c, nil
}

// Parse is Load for a config held in memory; relative paths in it resolve
// against dir.
func Parse(data []byte, dir string) (*Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	c, err := parse(data, filepath.Join(abs, "e2e.yaml"))
	if err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	return c, nil
}

func parse(data []byte, path string) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("the file is empty")
	}
	c := &Config{}
	// Strict, unlike upstream: a misspelt key is an error here rather than
	// a silently missing value. Upstream reads the same bytes leniently.
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, err
	}
	c.path = path
	c.raw = slices.Clone(data)
	c.Default()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Default fills in every unset field that has a default (see the fields'
// doc comments). Load calls it; it is exported for configs built in code.
func (c *Config) Default() {
	for i := range c.Images {
		if c.Images[i].LoadBehavior == "" {
			c.Images[i].LoadBehavior = MustLoad
		}
	}
	for i := range c.Providers {
		p := &c.Providers[i]
		for j := range p.Versions {
			v := &p.Versions[j]
			if v.Type == "" {
				v.Type = KustomizeSource
			}
			defaultFiles(v.Files)
		}
		defaultFiles(p.Files)
	}

	b := &c.Build
	setIfEmpty(&b.OutputDir, DefaultOutputDir)
	setIfEmpty(&b.Debian.Variant, DefaultDebianVariant)
	setIfEmpty(&b.Kind.Path, DefaultKindModule)
	setIfEmpty(&b.Kind.Rootfs, DefaultNodeRootfs)
	setIfEmpty(&b.ContainerRuntime.Source, RuntimeFromDebian)
	setIfEmpty(&b.ContainerRuntime.Containerd.Path, DefaultContainerdModule)
	setIfEmpty(&b.ContainerRuntime.Runc.Path, DefaultRuncModule)
	setIfEmpty(&b.ContainerRuntime.CNIPlugins.Path, DefaultCNIPluginsModule)
	setIfEmpty(&b.Crictl.Path, DefaultCrictlModule)
	setIfEmpty(&b.KubeProxyRootfs, DefaultNetRootfs)
	setIfEmpty(&b.KubeRouter.Path, DefaultKubeRouterModule)
	setIfEmpty(&b.KubeRouter.Rootfs, DefaultNetRootfs)
	setIfEmpty(&b.LoadBalancer.Rootfs, DefaultHAProxyRootfs)
	setIfEmpty(&b.CertManager.Path, DefaultCertManager)
	setIfEmpty(&b.Kustomize.Path, DefaultKustomizeModule)
	for i := range b.Kubernetes {
		k := &b.Kubernetes[i]
		if k.NodeImage == "" && k.Version != "" {
			k.NodeImage = "kindest/node:" + k.Version
		}
		setIfEmpty(&k.ImageRepository, DefaultImageRepository)
		setIfEmpty(&k.Etcd.Path, DefaultEtcdModule)
		setIfEmpty(&k.CoreDNS.Path, DefaultCoreDNSModule)
		setIfEmpty(&k.Pause.Source, k.Version)
	}
}

func defaultFiles(files []File) {
	for i := range files {
		if files[i].TargetName == "" && files[i].SourcePath != "" {
			files[i].TargetName = filepath.Base(files[i].SourcePath)
		}
	}
}

func setIfEmpty(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// Path returns the absolute path of the config file ("<dir>/e2e.yaml" for a
// config from Parse).
func (c *Config) Path() string { return c.path }

// Dir returns the directory relative paths in the config resolve against.
func (c *Config) Dir() string { return filepath.Dir(c.path) }

// Raw returns the bytes the config was read from.
func (c *Config) Raw() []byte { return slices.Clone(c.raw) }

// ResolvePath makes p absolute against Dir, as upstream does for provider
// files; an absolute p is returned cleaned.
func (c *Config) ResolvePath(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Dir(), p)
}

// OutputDir returns the absolute Build.OutputDir.
func (c *Config) OutputDir() string { return c.ResolvePath(c.Build.OutputDir) }
