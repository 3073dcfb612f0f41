package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Errors collects the config's problems as field errors (apimachinery's
// field.Error), each naming the field by its YAML path, e.g.
// "build.kubernetes[1].etcd.image". The image factory checks its part of
// the build section (factory/buildspec) with it too, so that both parts
// report problems alike.
type Errors field.ErrorList

// Add records that the field at path is invalid, saying why.
func (e *Errors) Add(path, format string, args ...any) {
	*e = append(*e, field.Invalid(field.NewPath(path), field.OmitValueType{}, fmt.Sprintf(format, args...)))
}

// Required records that the field at path is required when value is
// blank, and reports whether it is set.
func (e *Errors) Required(path, value string) bool {
	if strings.TrimSpace(value) == "" {
		*e = append(*e, field.Required(field.NewPath(path), ""))
		return false
	}
	return true
}

// Err returns the problems one per line, or nil.
func (e Errors) Err() error {
	list := make([]error, len(e))
	for i, fe := range e {
		list[i] = fe
	}
	return errors.Join(list...)
}

// nameRE is what kind and Docker accept as a cluster name.
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Version checks v is a whole semantic version with the leading "v" Go
// modules use: v1.2.3, v1.2.3-rc.1 (not semver's shorthand v1.2).
func (e *Errors) Version(path, v string) {
	if e.Required(path, v) && (!semver.IsValid(v) || semver.Canonical(v) != strings.TrimSuffix(v, semver.Build(v))) {
		e.Add(path, "%q is not a semantic version such as v1.2.3", v)
	}
}

// Ref checks ref is an image reference that names a tag.
func (e *Errors) Ref(path, ref string) {
	if _, ok := tag(ref); e.Required(path, ref) && !ok {
		e.Add(path, "%q is not an image reference with a tag, such as registry.k8s.io/pause:3.10.2", ref)
	}
}

// tag returns the tag an image reference names itself, and whether it
// names one (an untagged reference means "latest", which no build of ours
// produces).
func tag(ref string) (string, bool) {
	t, err := name.NewTag(ref, name.WeakValidation)
	if err != nil || !strings.HasSuffix(ref, ":"+t.TagStr()) {
		return "", false
	}
	return t.TagStr(), true
}

// ImageTag returns the tag an image reference names, or "" when it names
// none.
func ImageTag(ref string) string {
	t, _ := tag(ref)
	return t
}

// Validate checks the whole config and returns every problem found, each a
// *field.Error naming the field (joined with errors.Join, one per line), or
// nil. It expects defaults to be filled in (Load does; see Default).
//
// Release markers and http(s) sources are checked for form only, offline:
// package sources resolves and fetches them. Beyond upstream's checks it
// cross-checks the sections: variables must name built Kubernetes versions
// and their etcd/CoreDNS tags, and every controller image must be loaded
// into the management cluster. The factory's part of the build section is
// checked by factory/buildspec.
func (c *Config) Validate() error {
	var e Errors
	if e.Required("managementClusterName", c.ManagementClusterName) && !nameRE.MatchString(c.ManagementClusterName) {
		e.Add("managementClusterName", "%q must be lower-case letters, digits and '-'", c.ManagementClusterName)
	}
	for i, img := range c.Images {
		f := fmt.Sprintf("images[%d]", i)
		e.Ref(f+".name", img.Name)
		if img.LoadBehavior != MustLoad && img.LoadBehavior != TryLoad {
			e.Add(f+".loadBehavior", "%q is not %s or %s", img.LoadBehavior, MustLoad, TryLoad)
		}
	}
	c.validateProviders(&e)
	c.validateIntervals(&e)
	c.Build.validate(&e)
	c.validateCrossChecks(&e)
	return e.Err()
}

func (c *Config) validateProviders(e *Errors) {
	byType := map[string][]string{}
	for i, p := range c.Providers {
		f := fmt.Sprintf("providers[%d]", i)
		e.Required(f+".name", p.Name)
		switch p.Type {
		case CoreProvider, BootstrapProvider, ControlPlaneProvider, InfrastructureProvider,
			IPAMProvider, RuntimeExtensionProvider, AddonProvider:
			byType[p.Type] = append(byType[p.Type], p.Name)
		case "":
			e.Add(f+".type", "required")
		default:
			e.Add(f+".type", "%q is not a clusterctl provider type", p.Type)
		}
		if len(p.Versions) == 0 {
			e.Add(f+".versions", "at least one version is required")
		}
		for j, v := range p.Versions {
			vf := fmt.Sprintf("%s.versions[%d]", f, j)
			validateVersionSource(e, vf, v)
			for k, r := range v.Replacements {
				if _, err := regexp.Compile(r.Old); err != nil {
					e.Add(fmt.Sprintf("%s.replacements[%d].old", vf, k), "%v", err)
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
			e.Add("providers", "at most one %s, found %d", typ, len(names))
		case len(names) == 1 && names[0] != name:
			e.Add("providers", "the %s must be named %q, not %q", typ, name, names[0])
		}
	}
	named(CoreProvider, "cluster-api")
	named(BootstrapProvider, "kubeadm")
	named(ControlPlaneProvider, "kubeadm")
}

// validateVersionSource checks a provider version's name, value and type.
// A release marker and an http(s) value are checked for form only: the
// sources package resolves and fetches them, before setup creates anything.
func validateVersionSource(e *Errors, vf string, v ProviderVersion) {
	marker := IsReleaseMarker(v.Name)
	switch {
	case !marker:
		e.Version(vf+".name", v.Name)
	case v.Type != URLSource:
		e.Add(vf+".name", "release marker %q needs type %s (upstream resolves markers of url sources only), not %q", v.Name, URLSource, v.Type)
	default:
		if _, err := ParseReleaseMarker(v.Name); err != nil {
			e.Add(vf+".name", "%v", err)
		}
	}
	if v.Type != URLSource && v.Type != KustomizeSource {
		e.Add(vf+".type", "%q is not %s or %s", v.Type, URLSource, KustomizeSource)
	}
	if !e.Required(vf+".value", v.Value) {
		return
	}
	value := v.Value
	if marker {
		// The marker stands for a version: check the value as it will be.
		value = strings.ReplaceAll(value, v.Name, "v0.0.0")
	}
	if strings.Contains(value, "{go://") {
		e.Add(vf+".value", "%q holds a release marker that is not the version's name %q: only the name's marker is replaced", v.Value, v.Name)
	}
	if IsNetworkSource(value) {
		if v.Type != URLSource {
			e.Add(vf+".value", "%q: a remote kustomization is fetched by kustomize itself, which setup cannot check up front; use type %s with a components file, or a local kustomization root", v.Value, URLSource)
		} else if u, err := url.Parse(value); err != nil || u.Host == "" {
			e.Add(vf+".value", "%q is not an http(s) URL with a host", v.Value)
		}
	}
}

// IsNetworkSource reports whether a provider version's value is fetched
// over the network (http:// or https://) rather than read from a file.
func IsNetworkSource(value string) bool {
	return strings.HasPrefix(value, "http://") || strings.HasPrefix(value, "https://")
}

// IsReleaseMarker reports whether a provider version's name is meant as a
// release marker (it starts with "{"): a semantic version never does.
// ParseReleaseMarker says whether it is a well-formed one.
func IsReleaseMarker(name string) bool { return strings.HasPrefix(name, "{") }

// ReleaseMarker is upstream's release marker, a provider version name that
// stands for the latest release of a minor series of a Go module, as the
// Go module proxy lists them:
//
//	{go://<module path>@v<major>.<minor>}        the highest stable release
//	{go://<module path>@latest-v<major>.<minor>} pre-releases included
type ReleaseMarker struct {
	// Module is the module path, e.g. "sigs.k8s.io/cluster-api".
	Module string
	// Series is "v<major>.<minor>", e.g. "v1.13".
	Series string
	// Prereleases is true for a latest- marker.
	Prereleases bool
}

var markerRE = regexp.MustCompile(`^\{go://([^@{}]+)@(latest-)?(v(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*))\}$`)

// ParseReleaseMarker parses s as a ReleaseMarker, offline: the module path
// must be one the go command accepts, and a path with a major version
// suffix (/v2) must match the series.
func ParseReleaseMarker(s string) (ReleaseMarker, error) {
	m := markerRE.FindStringSubmatch(s)
	if m == nil {
		return ReleaseMarker{}, fmt.Errorf("%q is not a release marker: want {go://<module path>@v<major>.<minor>} or {go://<module path>@latest-v<major>.<minor>}, e.g. {go://sigs.k8s.io/cluster-api@v1.13}", s)
	}
	rm := ReleaseMarker{Module: m[1], Prereleases: m[2] != "", Series: m[3]}
	if err := module.CheckPath(rm.Module); err != nil {
		return ReleaseMarker{}, fmt.Errorf("release marker %q: %v", s, err)
	}
	if _, pathMajor, _ := module.SplitPathVersion(rm.Module); pathMajor != "" && module.PathMajorPrefix(pathMajor) != semver.Major(rm.Series) {
		return ReleaseMarker{}, fmt.Errorf("release marker %q: module %s holds major version %s only, not %s", s, rm.Module, module.PathMajorPrefix(pathMajor), rm.Series)
	}
	return rm, nil
}

// String returns the marker as written in a config.
func (m ReleaseMarker) String() string {
	latest := ""
	if m.Prereleases {
		latest = "latest-"
	}
	return "{go://" + m.Module + "@" + latest + m.Series + "}"
}

func validateFiles(e *Errors, field string, files []File) {
	for i, f := range files {
		e.Required(fmt.Sprintf("%s[%d].sourcePath", field, i), f.SourcePath)
	}
}

func (c *Config) validateIntervals(e *Errors) {
	for _, k := range slices.Sorted(maps.Keys(c.IntervalsByKey)) {
		f := fmt.Sprintf("intervals[%s]", k)
		spec, key, ok := strings.Cut(k, "/")
		if !ok || spec == "" || key == "" || strings.Contains(key, "/") {
			e.Add(f, "key must be <spec>/<key>, e.g. default/wait-cluster")
		}
		if _, _, err := parseInterval(c.IntervalsByKey[k]); err != nil {
			e.Add(f, "%v", err)
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

// Variables the cross-checks know about.
const (
	VarKubernetesVersion            = "KUBERNETES_VERSION"
	VarKubernetesVersionManagement  = "KUBERNETES_VERSION_MANAGEMENT"
	VarKubernetesVersionUpgradeFrom = "KUBERNETES_VERSION_UPGRADE_FROM"
	VarKubernetesVersionUpgradeTo   = "KUBERNETES_VERSION_UPGRADE_TO"
	VarEtcdVersionUpgradeTo         = "ETCD_VERSION_UPGRADE_TO"
	VarCoreDNSVersionUpgradeTo      = "COREDNS_VERSION_UPGRADE_TO"
	VarCNI                          = "CNI"
	// VarKubetestConfiguration is the conformance specs' file of e2e.test
	// flags (upstream's name).
	VarKubetestConfiguration = "KUBETEST_CONFIGURATION"
	// VarKubetestDualStackConfiguration is the dual-stack spec's file of
	// e2e.test flags (upstream's quick-start fixes the path instead).
	VarKubetestDualStackConfiguration = "KUBETEST_DUALSTACK_CONFIGURATION"
	// VarContainerEngineSocket is the host path of the engine's socket
	// that machines running CAPD mount (the self-hosted templates); the
	// suite sets it from the engine unless the config or environment does.
	VarContainerEngineSocket = "CONTAINER_ENGINE_SOCKET"
	// VarNodeImageRepository is the machines' node image repository in the
	// templates (default kindest/node); the suite sets docker.io/kindest/node
	// on Podman, whose containers report their image by its full name:
	// CAPD's MachinePool compares that name with the template's and, on a
	// mismatch, creates a machine on every reconcile.
	VarNodeImageRepository = "NODE_IMAGE_REPOSITORY"
	// VarKubeadmBinariesDir is the host folder holding
	// <version>/kubeadm for the Kubernetes versions whose kubeadm a
	// selected spec's machines mount (Requirement.KubeadmBinaries): the
	// suite copies each out of its node image and sets it, unless the
	// config or environment does.
	VarKubeadmBinariesDir = "KUBEADM_BINARIES_DIR"
)

// validateCrossChecks checks that sections agree, with the variables as
// the specs will read them: the environment overrides the file.
func (c *Config) validateCrossChecks(e *Errors) {
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
			e.Add(field(name), "%q has no build.kubernetes entry (have %s): no node image would exist for it, and CAPD would try to pull one",
				v, strings.Join(c.Build.KubernetesVersions(), ", "))
		}
	}
	toVersion, _ := c.LookupVariable(VarKubernetesVersionUpgradeTo)
	if to, err := c.Build.KubernetesVersion(toVersion); err == nil {
		if v, ok := c.LookupVariable(VarEtcdVersionUpgradeTo); ok && v != ImageTag(to.Etcd.Image) {
			e.Add(field(VarEtcdVersionUpgradeTo), "%q is not the etcd tag %q of %s", v, ImageTag(to.Etcd.Image), to.Version)
		}
		if v, ok := c.LookupVariable(VarCoreDNSVersionUpgradeTo); ok && v != ImageTag(to.CoreDNS.Image) {
			e.Add(field(VarCoreDNSVersionUpgradeTo), "%q is not the CoreDNS tag %q of %s", v, ImageTag(to.CoreDNS.Image), to.Version)
		}
	}
	if v, ok := c.LookupVariable(VarCloudProvider); ok && v != "" && v != "external" {
		e.Add(field(VarCloudProvider), "%q is not \"external\" (the docker cloud-controller-manager) or \"\" (none: CAPD initialises Nodes)", v)
	}
	if v, ok := c.LookupVariable(VarStartupProbes); ok && v != "true" && v != "false" {
		e.Add(field(VarStartupProbes), "%q is not \"true\" (add a startup probe to the providers' controllers) or \"false\" (as shipped)", v)
	}
	if c.CloudProviderExternal() && c.Build.CloudControllerManager.Image == "" {
		e.Add("build.cloudControllerManager.image", "required: %s is \"external\"", VarCloudProvider)
	}
	for _, name := range []string{VarCNI, VarKubetestConfiguration, VarKubetestDualStackConfiguration} {
		if v, ok := c.LookupVariable(name); ok && v != "" {
			if st, err := os.Stat(c.ResolvePath(v)); err != nil || st.IsDir() {
				e.Add(field(name), "%q is not a file", v)
			}
		}
	}
}
