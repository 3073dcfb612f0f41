package specs

// Labels are the one vocabulary for filtering capd-e2e's specs, with
// Ginkgo's --label-filter (GINKGO_LABEL_FILTER in `make test-e2e`); spec
// descriptions carry no bracketed tags. Each spec puts its own labels on its
// It; a suite may add more on the Describe that calls the spec, but only
// from this list, so that a filter written against it selects the same
// specs in every suite that imports this package.
//
//	spec                     labels
//	QuickStartSpec           PR-Blocking, quick-start
//	ClusterUpgradeSpec       upgrade, slow
//	MachineHealthCheckSpec   remediation
//	SelfHostedSpec           self-hosted, clusterctl, slow
//
// Examples: "PR-Blocking" runs what a pull request must pass; "!slow" leaves
// out the specs that take more than about 20 minutes here; "remediation ||
// self-hosted" runs those two.
const (
	// LabelPRBlocking marks the specs a pull request must pass: the fast,
	// broad signal that a change did not break cluster creation.
	LabelPRBlocking = "PR-Blocking"
	// LabelQuickStart marks the quick-start spec.
	LabelQuickStart = "quick-start"
	// LabelUpgrade marks specs that upgrade a cluster's Kubernetes version.
	LabelUpgrade = "upgrade"
	// LabelRemediation marks specs in which a MachineHealthCheck replaces an
	// unhealthy Machine.
	LabelRemediation = "remediation"
	// LabelSelfHosted marks specs that move a cluster's management into
	// itself.
	LabelSelfHosted = "self-hosted"
	// LabelClusterctl marks specs that drive clusterctl beyond generating a
	// template (init, move).
	LabelClusterctl = "clusterctl"
	// LabelSlow marks specs that take more than about 20 minutes on a CI
	// machine.
	LabelSlow = "slow"
)
