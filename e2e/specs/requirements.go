package specs

import (
	"slices"

	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// Requirements returns what this package's specs that carry any of labels
// (the labels of the specs a suite will run) need of the e2e config; with
// no labels, every spec's. Give it to suite.Options.Requirements so that
// setup checks the config before it creates anything. Each spec's comes
// from its declaration (specFacts); its intervals from its waits, so the
// two cannot disagree.
func Requirements(labels ...string) []suite.Requirement {
	var out []suite.Requirement
	for _, f := range declaredSpecs() {
		if len(labels) > 0 && !slices.Contains(labels, f.label) {
			continue
		}
		intervals := slices.Concat(f.waits, f.cleanupWaitsOf())
		slices.Sort(intervals)
		versions := slices.DeleteFunc(slices.Clone(f.variables), func(v string) bool {
			return v == varKubetestConfiguration || v == varKubetestDualStackConfiguration || v == varEtcdVersionUpgradeTo || v == varCoreDNSVersionUpgradeTo
		})
		if f.inMemory {
			versions = nil
		}
		var conformance []string
		if f.conformance != "" {
			conformance = []string{f.conformance}
		}
		out = append(out, suite.Requirement{
			Spec:                f.name,
			Label:               f.label,
			Variables:           slices.Clone(f.variables),
			KubernetesVersions:  versions,
			Conformance:         conformance,
			Intervals:           slices.Compact(intervals),
			TestExtension:       f.testExtension,
			PreviousRelease:     f.previousRelease,
			InMemory:            f.inMemory,
			DualStackManagement: f.dualStackManagement,
			KubeadmBinaries:     slices.Clone(f.kubeadmBinaries),
		})
	}
	return out
}
