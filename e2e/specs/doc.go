// Package specs holds capd-e2e's reusable end-to-end specs for Cluster API
// providers, to be called from a Ginkgo suite, as upstream's
// sigs.k8s.io/cluster-api/test/e2e specs are:
//
//	QuickStartSpec          a cluster from a template: Available, every Machine Ready, deleted cleanly
//	DualStackSpec           a dual-stack quick-start, both families checked, then Kubernetes' dual-stack e2e tests
//	ClusterUpgradeSpec      control plane (with etcd and CoreDNS), then workers, to a new Kubernetes version
//	MachineHealthCheckSpec  a Machine broken for real (container stopped) is replaced by a new one with a new Node
//	SelfHostedSpec          clusterctl init and move into the workload cluster, no rollout, move back
//	MachinePoolSpec         a MachinePool scaled 2 → 3 → 1 → 0, its Nodes following
//	MachineDeploymentRolloutSpec  every MachineDeployment rolled out: new Machines, the old ones gone; on a new or an existing cluster
//	RuntimeSDKSpec          a runtime extension's lifecycle hooks hold and release creation, upgrade, deletion
//	ClusterctlUpgradeSpec   a management cluster of the previous release upgraded by clusterctl, no rollout
//
// Each XSpec takes a func returning its XSpecInput, called when the spec
// runs (after the suite's setup has filled in the management cluster), and
// registers one It with its labels (labels.go) and its cleanup. Every input
// embeds CommonInput; optional fields say what happens when they are
// unset. A spec is bounded by its input's Timeout, by default the sum of
// its waits at the config's intervals (Ginkgo's SpecTimeout would have to
// be known before the config is read).
//
// What every spec does besides its own checks:
//
//   - a namespace "<spec>-<random>" in the management cluster, its events
//     streamed to clusters/bootstrap/resources/<namespace>/events.log;
//   - a cluster "<spec>-<random>" created phase by phase (template, apply,
//     infrastructure, control plane initialised, control plane ready,
//     workers), each wait bounded by the config's intervals: a missing
//     interval fails the spec rather than falling back to a silent default;
//   - in its cleanup, even when the spec failed before the Cluster existed:
//     clusterctl describe, the namespace's resources, the workload cluster's
//     Pods and Nodes, every machine's logs collected at once
//     (clusters/<cluster>/machines/<container>/, infrastructure/), the
//     container snapshot (clusters/<cluster>/containers.txt), then the
//     cluster's deletion (wait-delete-cluster), the namespace's, and a leak
//     check that fails the spec if any container of the cluster is left;
//   - clusters/<cluster>/summary.txt (and summary.json): every phase's
//     start and duration and, on failure, the failing phase, the
//     conditions of the Cluster, control plane, MachineDeployments and
//     Machines, and the container table. It is written even when the spec
//     failed, timed out or panicked.
//
// Spec logic lives here; wiring (flags, the management cluster, the
// clusterctl repository) lives in framework/suite, below the specs. A
// provider's suite, with its own config and management cluster, calls the
// specs like this:
//
//	var e2eSuite = suite.New(flag.CommandLine, suite.Options{
//		DefaultConfig: "config/e2e.yaml",
//		Requirements:  specs.Requirements,
//	})
//
//	var _ = Describe("Quick start", func() {
//		specs.QuickStartSpec(func() specs.QuickStartSpecInput {
//			return specs.QuickStartSpecInput{CommonInput: specs.CommonInputFrom(e2eSuite.Environment())}
//		})
//	})
//
//	var _ = Describe("Control-plane remediation", func() {
//		specs.MachineHealthCheckSpec(func() specs.MachineHealthCheckSpecInput {
//			return specs.MachineHealthCheckSpecInput{
//				CommonInput: specs.CommonInputFrom(e2eSuite.Environment()),
//				Mode:        specs.ControlPlaneRemediation,
//			}
//		})
//	})
//
// A suite with a setup of its own fills CommonInput's fields itself
// (E2EConfig, ClusterctlConfigPath, BootstrapClusterProxy, ArtifactFolder,
// Runtime), as with upstream's specs. Run them with, e.g., ginkgo
// --label-filter=PR-Blocking.
//
// The cluster templates the specs use by default are in data/ at the
// repository root; a provider brings its own flavors of the same names, or
// sets Flavor.
//
// A spec's facts (its name, label, the variables it reads, whether it
// needs the test extension, the previous release or a conformance image,
// every wait it makes) are declared once, in the spec's own file, with
// declare (facts.go); Requirements, the default timeouts and the image plan
// (which builds what the selected specs' Requirements name) read that
// declaration, and a unit test checks it against the waits the spec's code
// makes. A new spec is its file, with its declaration, and its Describe.
//
// This package must not build the management cluster, the clusterctl
// repository or images, and must not sleep: every wait is an Eventually or
// Consistently bounded by the config's intervals.
package specs
