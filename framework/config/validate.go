package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// FieldError is one problem with the config, naming the field by its YAML
// path, e.g. "build.kubernetes[1].etcd.version".
type FieldError struct {
	// Field is the YAML path of the field.
	Field string
	// Problem says what is wrong, e.g. "required".
	Problem string
}

// Error returns "field: problem".
func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// errs collects FieldErrors.
type errs []error

func (e *errs) add(field, format string, args ...any) {
	*e = append(*e, &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (e *errs) required(field, value string) bool {
	if strings.TrimSpace(value) == "" {
		e.add(field, "required")
		return false
	}
	return true
}

var (
	// semverRE is a semantic version with the leading "v" Go modules use.
	semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	// nameRE is what kind and Docker accept as a cluster name.
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// refRE is an image reference with an explicit tag: an untagged
	// reference means "latest", which no build of ours produces.
	refRE = regexp.MustCompile(`^[a-z0-9]+([._:/-][a-zA-Z0-9]+)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
)

func (e *errs) version(field, v string) {
	if e.required(field, v) && !semverRE.MatchString(v) {
		e.add(field, "%q is not a semantic version such as v1.2.3", v)
	}
}

func (e *errs) ref(field, ref string) {
	if e.required(field, ref) && !refRE.MatchString(ref) {
		e.add(field, "%q is not an image reference with a tag, such as registry.k8s.io/pause:3.10.2", ref)
	}
}

// tag returns the tag of an image reference, or "".
func tag(ref string) string {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return ref[i+1:]
}

// Validate checks the whole config and returns every problem found, each a
// *FieldError naming the field (joined with errors.Join), or nil. It
// expects defaults to be filled in (Load does; see Default).
//
// Beyond upstream's checks it rejects what cannot work offline (release
// markers) and cross-checks the sections: variables must name built
// Kubernetes versions and their etcd/CoreDNS tags, every controller image
// must be loaded into the management cluster, and image references must not
// collide.
func (c *Config) Validate() error {
	var e errs
	if e.required("managementClusterName", c.ManagementClusterName) && !nameRE.MatchString(c.ManagementClusterName) {
		e.add("managementClusterName", "%q must be lower-case letters, digits and '-'", c.ManagementClusterName)
	}
	for i, img := range c.Images {
		f := fmt.Sprintf("images[%d]", i)
		e.ref(f+".name", img.Name)
		if img.LoadBehavior != MustLoad && img.LoadBehavior != TryLoad {
			e.add(f+".loadBehavior", "%q is not %s or %s", img.LoadBehavior, MustLoad, TryLoad)
		}
	}
	c.validateProviders(&e)
	c.validateIntervals(&e)
	c.Build.validate(&e)
	c.validateCrossChecks(&e)
	return errors.Join(e...)
}

func (c *Config) validateProviders(e *errs) {
	byType := map[string][]string{}
	for i, p := range c.Providers {
		f := fmt.Sprintf("providers[%d]", i)
		e.required(f+".name", p.Name)
		switch p.Type {
		case CoreProvider, BootstrapProvider, ControlPlaneProvider, InfrastructureProvider,
			IPAMProvider, RuntimeExtensionProvider, AddonProvider:
			byType[p.Type] = append(byType[p.Type], p.Name)
		case "":
			e.add(f+".type", "required")
		default:
			e.add(f+".type", "%q is not a clusterctl provider type", p.Type)
		}
		if len(p.Versions) == 0 {
			e.add(f+".versions", "at least one version is required")
		}
		for j, v := range p.Versions {
			vf := fmt.Sprintf("%s.versions[%d]", f, j)
			if strings.HasPrefix(v.Name, "{") {
				e.add(vf+".name", "release marker %q needs the network to resolve; pin a version", v.Name)
			} else {
				e.version(vf+".name", v.Name)
			}
			e.required(vf+".value", v.Value)
			if v.Type != URLSource && v.Type != KustomizeSource {
				e.add(vf+".type", "%q is not %s or %s", v.Type, URLSource, KustomizeSource)
			}
			if strings.HasPrefix(v.Value, "http://") || strings.HasPrefix(v.Value, "https://") {
				e.add(vf+".value", "%q needs the network; use a local file or kustomization", v.Value)
			}
			for k, r := range v.Replacements {
				if _, err := regexp.Compile(r.Old); err != nil {
					e.add(fmt.Sprintf("%s.replacements[%d].old", vf, k), "%v", err)
				}
			}
			validateFiles(e, vf+".files", v.Files)
		}
		validateFiles(e, f+".files", p.Files)
	}
	// The built-in providers fill in what is not declared; a declared one
	// replaces a built-in and must be named as clusterctl expects it.
	named := func(typ, name string) {
		switch names := byType[typ]; {
		case len(names) > 1:
			e.add("providers", "at most one %s, found %d", typ, len(names))
		case len(names) == 1 && names[0] != name:
			e.add("providers", "the %s must be named %q, not %q", typ, name, names[0])
		}
	}
	named(CoreProvider, "cluster-api")
	named(BootstrapProvider, "kubeadm")
	named(ControlPlaneProvider, "kubeadm")
}

func validateFiles(e *errs, field string, files []File) {
	for i, f := range files {
		e.required(fmt.Sprintf("%s[%d].sourcePath", field, i), f.SourcePath)
	}
}

func (c *Config) validateIntervals(e *errs) {
	for _, k := range slices.Sorted(maps.Keys(c.IntervalsByKey)) {
		f := fmt.Sprintf("intervals[%s]", k)
		spec, key, ok := strings.Cut(k, "/")
		if !ok || spec == "" || key == "" || strings.Contains(key, "/") {
			e.add(f, "key must be <spec>/<key>, e.g. default/wait-cluster")
		}
		if _, _, err := parseInterval(c.IntervalsByKey[k]); err != nil {
			e.add(f, "%v", err)
		}
	}
}

// parseInterval turns [timeout] or [timeout, poll] into durations; poll
// defaults to DefaultPollInterval.
func parseInterval(v []string) (timeout, poll time.Duration, err error) {
	if len(v) != 1 && len(v) != 2 {
		return 0, 0, fmt.Errorf("want [timeout] or [timeout, poll], got %d values", len(v))
	}
	timeout, err = time.ParseDuration(v[0])
	if err != nil {
		return 0, 0, fmt.Errorf("timeout: %w", err)
	}
	poll = DefaultPollInterval
	if len(v) == 2 {
		if poll, err = time.ParseDuration(v[1]); err != nil {
			return 0, 0, fmt.Errorf("poll: %w", err)
		}
	}
	if timeout <= 0 || poll <= 0 {
		return 0, 0, fmt.Errorf("durations must be positive, got %q", v)
	}
	if poll > timeout {
		return 0, 0, fmt.Errorf("poll %s is longer than timeout %s", poll, timeout)
	}
	return timeout, poll, nil
}

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
		if k.Pause.Version != "" && tag(k.Pause.Image) != "" && tag(k.Pause.Image) != k.Pause.Version {
			e.add(f+".pause.image", "tag %q is not the version %q", tag(k.Pause.Image), k.Pause.Version)
		}
		e.version(f+".pause.source", k.Pause.Source)
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
	if t, v := tag(c.Image), strings.TrimPrefix(c.Version, "v"); t != "" && v != "" && !strings.Contains(t, v) {
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
	}
	add("build.loadBalancer.image", b.LoadBalancer.Image, "haproxy")
	add("build.clusterAPI.images.core", b.ClusterAPI.Images.Core, "capi core")
	add("build.clusterAPI.images.kubeadmBootstrap", b.ClusterAPI.Images.KubeadmBootstrap, "capi bootstrap")
	add("build.clusterAPI.images.kubeadmControlPlane", b.ClusterAPI.Images.KubeadmControlPlane, "capi control plane")
	add("build.clusterAPI.images.docker", b.ClusterAPI.Images.Docker, "capd")
	add("build.certManager.substituteImage", b.CertManager.SubstituteImage, "cert-manager substitute")
	for i, g := range b.GoImages {
		add(fmt.Sprintf("build.goImages[%d].image", i), g.Image, fmt.Sprintf("go image %d", i))
	}
	add("build.cloudControllerManager.image", b.CloudControllerManager.Image, "cloud controller manager")
}

// Variables the cross-checks know about.
const (
	VarKubernetesVersion            = "KUBERNETES_VERSION"
	VarKubernetesVersionManagement  = "KUBERNETES_VERSION_MANAGEMENT"
	VarKubernetesVersionUpgradeFrom = "KUBERNETES_VERSION_UPGRADE_FROM"
	VarKubernetesVersionUpgradeTo   = "KUBERNETES_VERSION_UPGRADE_TO"
	VarEtcdVersionUpgradeTo         = "ETCD_VERSION_UPGRADE_TO"
	VarCoreDNSVersionUpgradeTo      = "COREDNS_VERSION_UPGRADE_TO"
	VarCNI                          = "CNI"
)

// validateCrossChecks checks that sections agree, with the variables as
// the specs will read them: the environment overrides the file.
func (c *Config) validateCrossChecks(e *errs) {
	field := func(name string) string {
		if _, ok := os.LookupEnv(name); ok {
			return "variables." + name + " (environment)"
		}
		return "variables." + name
	}
	for _, name := range []string{VarKubernetesVersion, VarKubernetesVersionManagement, VarKubernetesVersionUpgradeFrom, VarKubernetesVersionUpgradeTo} {
		v, ok := c.LookupVariable(name)
		if !ok || v == "" {
			continue // whether a spec needs it is for the suite to say
		}
		if _, err := c.Build.KubernetesVersion(v); err != nil {
			e.add(field(name), "%q has no build.kubernetes entry (have %s): no node image would exist for it, and CAPD would try to pull one",
				v, strings.Join(c.Build.KubernetesVersions(), ", "))
		}
	}
	toVersion, _ := c.LookupVariable(VarKubernetesVersionUpgradeTo)
	if to, err := c.Build.KubernetesVersion(toVersion); err == nil {
		if v, ok := c.LookupVariable(VarEtcdVersionUpgradeTo); ok && v != tag(to.Etcd.Image) {
			e.add(field(VarEtcdVersionUpgradeTo), "%q is not the etcd tag %q of %s", v, tag(to.Etcd.Image), to.Version)
		}
		if v, ok := c.LookupVariable(VarCoreDNSVersionUpgradeTo); ok && v != tag(to.CoreDNS.Image) {
			e.add(field(VarCoreDNSVersionUpgradeTo), "%q is not the CoreDNS tag %q of %s", v, tag(to.CoreDNS.Image), to.Version)
		}
	}
	if v, ok := c.LookupVariable(VarCloudProvider); ok && v != "" && v != "external" {
		e.add(field(VarCloudProvider), "%q is not \"external\" (the docker cloud-controller-manager) or \"\" (none: CAPD initialises Nodes)", v)
	}
	if v, ok := c.LookupVariable(VarStartupProbes); ok && v != "true" && v != "false" {
		e.add(field(VarStartupProbes), "%q is not \"true\" (add a startup probe to the providers' controllers) or \"false\" (as shipped)", v)
	}
	if c.CloudProviderExternal() && c.Build.CloudControllerManager.Image == "" {
		e.add("build.cloudControllerManager.image", "required: %s is \"external\"", VarCloudProvider)
	}
	if v, ok := c.LookupVariable(VarCNI); ok && v != "" {
		if st, err := os.Stat(c.ResolvePath(v)); err != nil || st.IsDir() {
			e.add(field(VarCNI), "%q is not a file", v)
		}
	}
}
