package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

// ClusterAPIModule is the module of Cluster API's core, kubeadm bootstrap
// and kubeadm control plane managers; CAPD is in its test module.
const (
	ClusterAPIModule     = "sigs.k8s.io/cluster-api"
	ClusterAPITestModule = "sigs.k8s.io/cluster-api/test"
)

// BuiltinContract is the Cluster API contract of the built-in providers
// (Cluster API v1.14's).
const BuiltinContract = "v1beta2"

// DevTag is the tag of controller images built from a working tree, as
// upstream's `make docker-build-e2e` tags them.
const DevTag = "dev"

// BuiltinProvider is a provider the harness builds and installs itself:
// Cluster API's core, kubeadm bootstrap and control plane, and CAPD.
type BuiltinProvider struct {
	// Type and Name are clusterctl's (CoreProvider, cluster-api, ...).
	Type, Name string
	// Label is clusterctl's folder name in a local repository
	// (cluster-api, bootstrap-kubeadm, control-plane-kubeadm,
	// infrastructure-docker) and ComponentsFile its components file name.
	Label, ComponentsFile string
	// Module is the module holding the manager in a release, and TreeDir
	// that module's directory in a cluster-api working tree ("" or
	// "test").
	Module, TreeDir string
	// Package is the manager's main package.
	Package string
	// Kustomization is the components' kustomization root, relative to
	// Module's root.
	Kustomization string
	// StagingName is the image name the kustomization uses
	// ("gcr.io/k8s-staging-cluster-api/<StagingName>:main").
	StagingName string
	// Image is the reference the manager is built as (the configured one,
	// with the tag "dev" when built from a working tree).
	Image string
	// StepID is the `make images` step that builds Image.
	StepID string
	// Templates is true for CAPD: the harness's cluster templates (data/)
	// are its files.
	Templates bool
}

// Step IDs of the built-in providers' images.
const (
	StepCAPICore                = "cluster-api/core"
	StepCAPIKubeadmBootstrap    = "cluster-api/kubeadm-bootstrap"
	StepCAPIKubeadmControlPlane = "cluster-api/kubeadm-control-plane"
	StepCAPD                    = "cluster-api/docker"
	StepCAPITestExtension       = "cluster-api/test-extension"
)

// TestExtensionName is the clusterctl name of the test runtime extension,
// upstream's.
const TestExtensionName = "test-extension"

// BuiltinProviders returns the built-in providers, in clusterctl's order:
// the four of every run, then the test runtime extension when
// build.clusterAPI.images.testExtension is set.
func (c *Config) BuiltinProviders() []BuiltinProvider {
	imgs := c.Build.ClusterAPI.Images
	img := func(ref string) string {
		if c.Build.ClusterAPI.Source == "" {
			return ref
		}
		return WithTag(ref, DevTag)
	}
	out := []BuiltinProvider{
		{CoreProvider, "cluster-api", "cluster-api", "core-components.yaml", ClusterAPIModule, "",
			ClusterAPIModule + "/core", "core/config/default", "cluster-api-controller", img(imgs.Core), StepCAPICore, false},
		{BootstrapProvider, "kubeadm", "bootstrap-kubeadm", "bootstrap-components.yaml", ClusterAPIModule, "",
			ClusterAPIModule + "/bootstrap/kubeadm", "bootstrap/kubeadm/config/default", "kubeadm-bootstrap-controller", img(imgs.KubeadmBootstrap), StepCAPIKubeadmBootstrap, false},
		{ControlPlaneProvider, "kubeadm", "control-plane-kubeadm", "control-plane-components.yaml", ClusterAPIModule, "",
			ClusterAPIModule + "/controlplane/kubeadm", "controlplane/kubeadm/config/default", "kubeadm-control-plane-controller", img(imgs.KubeadmControlPlane), StepCAPIKubeadmControlPlane, false},
		{InfrastructureProvider, "docker", "infrastructure-docker", "infrastructure-components.yaml", ClusterAPITestModule, "test",
			ClusterAPITestModule + "/infrastructure/docker", "infrastructure/docker/config/default", "capd-manager", img(imgs.Docker), StepCAPD, true},
	}
	if imgs.TestExtension != "" {
		out = append(out, BuiltinProvider{RuntimeExtensionProvider, TestExtensionName, "runtime-extension-" + TestExtensionName, "runtime-extension-components.yaml",
			ClusterAPITestModule, "test", ClusterAPITestModule + "/extension", "extension/config/default", "test-extension", img(imgs.TestExtension), StepCAPITestExtension, false})
	}
	return out
}

// PreviousProviders returns the four providers of
// build.clusterAPI.previous, the release the clusterctl-upgrade spec
// upgrades from, in clusterctl's order, or nil when it is unset. Their
// images are the configured ones tagged with that version; before v1.14
// the core manager is the root package with its kustomization in
// config/default (v1.14 moved both under core/).
func (c *Config) PreviousProviders() []BuiltinProvider {
	p := c.Build.ClusterAPI.Previous
	if p == nil {
		return nil
	}
	var out []BuiltinProvider
	for _, b := range c.BuiltinProviders()[:4] {
		// The release's tag replaces the configured one (or "dev").
		b.Image = WithTag(b.Image, p.Version)
		b.StepID = PreviousStepID(b.StepID, p.Version)
		if b.Type == CoreProvider && semver.Compare(p.Version, "v1.14.0") < 0 {
			b.Package, b.Kustomization = ClusterAPIModule, "config/default"
		}
		out = append(out, b)
	}
	return out
}

// PreviousStepID is the `make images` step of a built-in provider's
// manager at an older release: "cluster-api/core" at v1.13.4 is
// "cluster-api/v1.13.4/core".
func PreviousStepID(step, version string) string {
	return strings.Replace(step, "/", "/"+version+"/", 1)
}

// ActiveBuiltinProviders returns the built-in providers the config does
// not replace (see Config.Providers).
func (c *Config) ActiveBuiltinProviders() []BuiltinProvider {
	var out []BuiltinProvider
	for _, b := range c.BuiltinProviders() {
		replaced := slices.ContainsFunc(c.Providers, func(p Provider) bool {
			if b.Type == InfrastructureProvider {
				return p.Type == InfrastructureProvider
			}
			return p.Type == b.Type && p.Name == b.Name
		})
		if !replaced {
			out = append(out, b)
		}
	}
	return out
}

// ClusterAPIVersion returns the version of the built-in providers: the
// configured release, or the version derived from the working tree when
// build.clusterAPI.source is set.
func (c *Config) ClusterAPIVersion() string {
	if c.Build.ClusterAPI.Source != "" {
		return c.Build.ClusterAPI.sourceVersion
	}
	return c.Build.ClusterAPI.Version
}

// ManagementImages returns every image the management cluster needs: the
// active built-in providers' managers, the cert-manager substitute, and
// the config's Images (in that order, without duplicates).
func (c *Config) ManagementImages() []Image {
	var out []Image
	add := func(img Image) {
		if i := slices.IndexFunc(out, func(o Image) bool { return o.Name == img.Name }); i >= 0 {
			out[i] = img
			return
		}
		out = append(out, img)
	}
	for _, b := range c.ActiveBuiltinProviders() {
		add(Image{Name: b.Image, LoadBehavior: MustLoad})
	}
	add(Image{Name: c.Build.CertManager.SubstituteImage, LoadBehavior: MustLoad})
	if c.CloudProviderExternal() {
		add(Image{Name: c.Build.CloudControllerManager.Image, LoadBehavior: MustLoad})
	}
	for _, img := range c.Images {
		add(img)
	}
	return out
}

// RenderedComponents says where a built-in provider's rendered
// components file is, in a folder laid out as a clusterctl local
// repository: <dir>/<label>/<version>/<components file>, with
// metadata.yaml beside it.
func (c *Config) RenderedComponents(dir string, b BuiltinProvider) (components, metadata string) {
	return RenderedComponentsAt(dir, b, c.ClusterAPIVersion())
}

// RenderedComponentsAt is RenderedComponents for a provider at version
// (a PreviousProviders one at build.clusterAPI.previous.version).
func RenderedComponentsAt(dir string, b BuiltinProvider, version string) (components, metadata string) {
	d := filepath.Join(dir, b.Label, version)
	return filepath.Join(d, b.ComponentsFile), filepath.Join(d, "metadata.yaml")
}

// RepositoryProviders returns every provider of the local clusterctl
// repository: the active built-in providers, whose components were
// rendered into renderDir (see RenderedComponents), followed by the
// config's own providers. A declared provider replacing the built-in CAPD
// keeps the harness's cluster templates it does not list itself.
func (c *Config) RepositoryProviders(renderDir string) ([]Provider, error) {
	templates, err := c.harnessTemplates()
	if err != nil {
		return nil, err
	}
	var out []Provider
	for _, b := range c.ActiveBuiltinProviders() {
		components, metadata := c.RenderedComponents(renderDir, b)
		v := ProviderVersion{Name: c.ClusterAPIVersion(), Value: components, Type: URLSource, Contract: BuiltinContract,
			Files: []File{{SourcePath: metadata, TargetName: "metadata.yaml"}}}
		if b.Templates {
			v.Files = append(v.Files, templates...)
		}
		out = append(out, Provider{Name: b.Name, Type: b.Type, Versions: []ProviderVersion{v}})
	}
	// The previous release's, beside the current version of the same
	// provider (clusterctl picks the highest for "latest").
	for _, b := range c.PreviousProviders() {
		i := slices.IndexFunc(out, func(p Provider) bool { return p.Type == b.Type && p.Name == b.Name })
		if i < 0 {
			continue // replaced by one of the config's providers
		}
		version := c.Build.ClusterAPI.Previous.Version
		components, metadata := RenderedComponentsAt(renderDir, b, version)
		v := ProviderVersion{Name: version, Value: components, Type: URLSource, Contract: BuiltinContract,
			Files: []File{{SourcePath: metadata, TargetName: "metadata.yaml"}}}
		if b.Templates {
			v.Files = append(v.Files, templates...)
		}
		out[i].Versions = append(out[i].Versions, v)
	}
	for _, p := range c.Providers {
		p = p.deepCopy()
		if p.Type == InfrastructureProvider && p.Name == "docker" {
			for i := range p.Versions {
				v := &p.Versions[i]
				for _, t := range templates {
					if !slices.ContainsFunc(v.Files, func(f File) bool { return f.TargetName == t.TargetName }) &&
						!slices.ContainsFunc(p.Files, func(f File) bool { return f.TargetName == t.TargetName }) {
						v.Files = append(v.Files, t)
					}
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// harnessTemplates lists the harness's cluster templates and the
// ClusterClasses they use: data/cluster-template*.yaml and
// data/clusterclass-*.yaml (clusterctl adds clusterclass-<name>.yaml to a
// template whose Cluster names that class, from the same folder).
func (c *Config) harnessTemplates() ([]File, error) {
	matches, err := filepath.Glob(filepath.Join(c.harnessRoot, "data", "cluster-template*.yaml"))
	if err != nil || len(matches) == 0 {
		return nil, fmt.Errorf("no cluster templates in %s: %v", filepath.Join(c.harnessRoot, "data"), err)
	}
	classes, err := filepath.Glob(filepath.Join(c.harnessRoot, "data", "clusterclass-*.yaml"))
	if err != nil {
		return nil, err
	}
	matches = append(matches, classes...)
	slices.Sort(matches)
	out := make([]File, len(matches))
	for i, m := range matches {
		out[i] = File{SourcePath: m, TargetName: filepath.Base(m)}
	}
	return out, nil
}

func (p Provider) deepCopy() Provider {
	p.Files = slices.Clone(p.Files)
	p.Versions = slices.Clone(p.Versions)
	for i := range p.Versions {
		p.Versions[i].Files = slices.Clone(p.Versions[i].Files)
		p.Versions[i].Replacements = slices.Clone(p.Versions[i].Replacements)
	}
	return p
}

// resolveClusterAPISource derives the version of a Cluster API working
// tree from its metadata.yaml, as upstream names a tree's version: the
// highest release series with patch 99 (v1.14.99).
func (c *Config) resolveClusterAPISource(e *Errors) {
	src := c.Build.ClusterAPI.Source
	if src == "" {
		return
	}
	field := "build.clusterAPI.source"
	if c.isOverridden(EnvClusterAPISource) {
		field += " (" + EnvClusterAPISource + ")"
	}
	for _, m := range []string{"go.mod", "api/go.mod", "test/go.mod", "metadata.yaml"} {
		if _, err := os.Stat(filepath.Join(src, m)); err != nil {
			e.Add(field, "%q is not a cluster-api working tree: %v", src, err)
			return
		}
	}
	data, err := os.ReadFile(filepath.Join(src, "metadata.yaml"))
	if err != nil {
		e.Add(field, "%v", err)
		return
	}
	var md struct {
		ReleaseSeries []struct {
			Major, Minor int
		} `json:"releaseSeries"`
	}
	if err := yaml.Unmarshal(data, &md); err != nil || len(md.ReleaseSeries) == 0 {
		e.Add(field, "%s has no releaseSeries (%v)", filepath.Join(src, "metadata.yaml"), err)
		return
	}
	slices.SortFunc(md.ReleaseSeries, func(a, b struct{ Major, Minor int }) int {
		if a.Major != b.Major {
			return a.Major - b.Major
		}
		return a.Minor - b.Minor
	})
	last := md.ReleaseSeries[len(md.ReleaseSeries)-1]
	c.Build.ClusterAPI.sourceVersion = fmt.Sprintf("v%d.%d.99", last.Major, last.Minor)
}

func (c *Config) isOverridden(env string) bool { return slices.Contains(c.overrides, env) }

// WithTag returns ref with its tag replaced (or added).
func WithTag(ref, newTag string) string {
	if t, ok := tag(ref); ok {
		ref = strings.TrimSuffix(ref, ":"+t)
	}
	return ref + ":" + newTag
}

// PolicyFor returns the source policy of a build step: the longest
// matching Policies key (an exact ID, or a prefix ending in "*"), else
// Policy. An image that is not published upstream can only come from a
// mirror: without one, it is always built.
func (r Registry) PolicyFor(stepID string, published bool) string {
	if !published && r.Mirror == "" {
		return PolicyBuild
	}
	policy, best := r.Policy, -1
	for k, v := range r.Policies {
		match := k == stepID || (strings.HasSuffix(k, "*") && strings.HasPrefix(stepID, strings.TrimSuffix(k, "*")))
		if match && len(k) > best {
			policy, best = v, len(k)
		}
	}
	if policy == "" {
		return PolicyPullElseBuild
	}
	return policy
}

// VarCloudProvider selects who initialises the workload clusters' Nodes:
// "external" (the default of the harness's config) runs the docker
// cloud-controller-manager for each cluster and the templates run the
// kubelet and kube-controller-manager with --cloud-provider=external; ""
// leaves it to CAPD, as upstream does.
const VarCloudProvider = "DOCKER_CLOUD_PROVIDER"

// CloudProviderExternal reports whether workload clusters run the docker
// cloud-controller-manager (VarCloudProvider is "external").
func (c *Config) CloudProviderExternal() bool {
	v, _ := c.LookupVariable(VarCloudProvider)
	return v == "external"
}

// VarStartupProbes says whether the harness adds a startup probe to the
// providers' controllers (repository.AddStartupProbes) in the clusterctl
// repository it creates: "true" (the default of the harness's config) or
// "false" (the components as the providers ship them). A clusterctl
// config given to the suite (-e2e.clusterctl-config) is never amended.
const VarStartupProbes = "PROVIDER_STARTUP_PROBES"

// StartupProbes reports whether VarStartupProbes is "true"; unset is
// false. Validate rejects other values.
func (c *Config) StartupProbes() bool {
	v, _ := c.LookupVariable(VarStartupProbes)
	return v == "true"
}

// CloudControllerManagerDir is where the cloud-controller-manager's
// module is (cloudprovider/ of the harness).
func (c *Config) CloudControllerManagerDir() string {
	return filepath.Join(c.harnessRoot, "cloudprovider")
}

// CloudControllerManagerPackage is its main package, relative to
// CloudControllerManagerDir.
const CloudControllerManagerPackage = "./cmd/capd-cloud-controller-manager"
