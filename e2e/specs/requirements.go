package specs

import "slices"

// Requirement is what one of this package's specs needs from the e2e
// config, so that a suite can check, before it creates anything, that the
// specs it will run can run: every variable set, every interval present,
// every Kubernetes version with a node image (framework/suite does).
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
}

// createIntervals are the waits of createCluster and its cleanup.
var createIntervals = []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes", "wait-delete-cluster"}

// requirements lists every spec's; keep it in step with the specs' code
// (requirements_test.go checks the keys the code uses are listed).
var requirements = []Requirement{
	{Spec: "quick-start", Label: LabelQuickStart,
		Variables: []string{varKubernetesVersion}, KubernetesVersions: []string{varKubernetesVersion},
		Intervals: append(slices.Clone(createIntervals), "wait-nodes-ready", "wait-load-balancer")},
	{Spec: "k8s-upgrade", Label: LabelUpgrade,
		Variables:          []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo},
		KubernetesVersions: []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo},
		Intervals:          append(slices.Clone(createIntervals), "wait-machine-upgrade", "wait-machine-deployment-upgrade", "wait-nodes-ready")},
	{Spec: "md-remediation", Label: LabelRemediation,
		Variables: []string{varKubernetesVersion}, KubernetesVersions: []string{varKubernetesVersion},
		Intervals: append(slices.Clone(createIntervals), "wait-machine-remediation")},
	{Spec: "kcp-remediation", Label: LabelRemediation,
		Variables: []string{varKubernetesVersion}, KubernetesVersions: []string{varKubernetesVersion},
		Intervals: append(slices.Clone(createIntervals), "wait-machine-remediation")},
	{Spec: "self-hosted", Label: LabelSelfHosted,
		Variables: []string{varKubernetesVersion}, KubernetesVersions: []string{varKubernetesVersion},
		Intervals: append(slices.Clone(createIntervals), "wait-controllers", "check-no-rollout")},
}

// Requirements returns the requirements of the specs that carry any of
// labels (the labels of the specs a suite will run); with no labels, of
// every spec.
func Requirements(labels ...string) []Requirement {
	var out []Requirement
	for _, r := range requirements {
		if len(labels) == 0 || slices.Contains(labels, r.Label) {
			r.Variables = slices.Clone(r.Variables)
			r.KubernetesVersions = slices.Clone(r.KubernetesVersions)
			r.Intervals = slices.Clone(r.Intervals)
			out = append(out, r)
		}
	}
	return out
}
