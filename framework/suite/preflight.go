package suite

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// Requirement is what a spec needs of the e2e config, so that a suite can
// check, before it creates anything, that the specs it will run can run:
// every variable set, every interval present, every Kubernetes version with
// a node image. e2e/specs.Requirements gives those of capd-e2e's specs; a
// provider's own specs may add theirs.
type Requirement struct {
	// Spec is the spec's name: its intervals are "<Spec>/<key>", falling
	// back to "default/<key>".
	Spec string
	// Label is the spec's own label; a suite whose selection includes a
	// spec with this label needs this requirement.
	Label string
	// Variables must be set (in the config or the environment).
	Variables []string
	// KubernetesVersions are the variables among Variables whose value is
	// a Kubernetes version, which must have a node image.
	KubernetesVersions []string
	// Intervals are the interval keys the spec waits with.
	Intervals []string
	// TestExtension is set when the spec needs Cluster API's test runtime
	// extension installed (the built-in provider of
	// build.clusterAPI.images.testExtension).
	TestExtension bool
	// PreviousRelease is set when the spec upgrades from
	// build.clusterAPI.previous (which must then be set).
	PreviousRelease bool
	// InMemory is set when the spec's clusters run on CAPD's in-memory
	// backend: it needs nothing in the engine for them (no load balancer
	// image; KubernetesVersions is then empty: no node image either).
	InMemory bool
	// Conformance are the variables among KubernetesVersions at whose
	// version the spec runs Kubernetes' conformance suite: that
	// build.kubernetes entry needs a conformance section (its image and
	// e2e test images).
	Conformance []string
	// DualStackManagement is set when the spec's workload clusters are
	// IPv6-only: the management cluster's controllers, and the
	// cloud-controller-manager beside them, reach their API servers at
	// IPv6 addresses, so the kind management cluster the suite creates is
	// dual-stack (bootstrap.KindOptions.DualStack). A management cluster
	// the user gives (a kubeconfig) must be so already.
	DualStackManagement bool
	// KubeadmBinaries are the variables among KubernetesVersions whose
	// kubeadm binary the spec's machines mount from the host: setup
	// copies each out of its node image into the folder it sets as
	// KUBEADM_BINARIES_DIR (config.VarKubeadmBinariesDir), as
	// <version>/kubeadm.
	KubeadmBinaries []string
}

// preflight checks that cfg (with the environment's overrides) has what
// the specs of reqs need: every variable set, every Kubernetes version
// with a node image to build, every interval. With management, the
// management cluster's version too. It returns every problem, one line
// each, naming the field.
func preflight(cfg *config.Config, reqs []Requirement, management bool) error {
	var errs []error
	seen := map[string]bool{}
	add := func(err error) {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
	}
	version := func(name, who string) {
		v, ok := cfg.LookupVariable(name)
		switch {
		case !ok || strings.TrimSpace(v) == "":
			add(fmt.Errorf("variables.%s: required by %s, set neither in %s nor in the environment", name, who, cfg.Path()))
		default:
			if _, err := cfg.Build.KubernetesVersion(v); err != nil {
				add(fmt.Errorf("variables.%s: %q has no node image (build.kubernetes has %s), needed by %s", name, v, strings.Join(cfg.Build.KubernetesVersions(), ", "), who))
			}
		}
	}
	if management {
		version(config.VarKubernetesVersionManagement, "the management cluster")
		if _, err := managementDualStack(cfg, nil); err != nil {
			add(err)
		}
	}
	for _, r := range reqs {
		who := "spec " + r.Spec
		for _, v := range r.Variables {
			if slices.Contains(r.KubernetesVersions, v) {
				version(v, who)
				continue
			}
			if val, ok := cfg.LookupVariable(v); !ok || strings.TrimSpace(val) == "" {
				add(fmt.Errorf("variables.%s: required by %s, set neither in %s nor in the environment", v, who, cfg.Path()))
			}
		}
		for _, k := range r.Intervals {
			if _, _, err := cfg.Intervals(r.Spec, k); err != nil {
				add(fmt.Errorf("%w (needed by %s)", err, who))
			}
		}
		for _, name := range r.Conformance {
			v, _ := cfg.LookupVariable(name)
			if k, err := cfg.Build.KubernetesVersion(v); err == nil && k.Conformance == nil {
				add(fmt.Errorf("build.kubernetes %s: no conformance section, needed by %s (it runs the conformance suite at variables.%s)", k.Version, who, name))
			}
		}
		if r.PreviousRelease {
			if cfg.Build.ClusterAPI.Previous == nil {
				add(fmt.Errorf("build.clusterAPI.previous: required by %s (the release clusterctl upgrade starts from), unset in %s", who, cfg.Path()))
			}
			// The further management cluster it creates.
			version(config.VarKubernetesVersionManagement, who+"'s management cluster")
		}
	}
	return errors.Join(errs...)
}

// VarIPFamily is upstream's variable of the management cluster's IP
// family: "IPv4" (or unset) and "dual" are what the suite's kind cluster
// can be.
const VarIPFamily = "IP_FAMILY"

// managementDualStack says whether the management cluster the suite
// creates is dual-stack: IP_FAMILY is "dual" (upstream's way to ask), or
// a spec of reqs needs it (Requirement.DualStackManagement). IP_FAMILY
// "IPv6", or anything but IPv4 and dual, is an error: the management
// cluster's node image bakes an IPv4 CNI, and an IPv6-only one is not
// needed (a dual-stack one reaches IPv6-only workload clusters).
func managementDualStack(cfg *config.Config, reqs []Requirement) (bool, error) {
	v, _ := cfg.LookupVariable(VarIPFamily)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "ipv4":
		return slices.ContainsFunc(reqs, func(r Requirement) bool { return r.DualStackManagement }), nil
	case "dual":
		return true, nil
	default:
		return false, fmt.Errorf("variables.%s: %q: the management cluster the suite creates is IPv4 or dual (dual-stack), not %s", VarIPFamily, v, v)
	}
}
