package specs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// specFacts is what the harness knows of one spec besides its code,
// declared once, beside the spec, with declare: the pre-run check
// (Requirements, so also the image plan, which builds what the selected
// specs' Requirements name), the default timeouts (timeouts.go) and the
// test that checks both against the code (timeouts_test.go) read it. A new
// spec is its file, with its declaration, and its Describe.
type specFacts struct {
	// name is the spec's name: its intervals' prefix in the config, its
	// namespace's and cluster's prefix (upstream's specName).
	name string
	// label is the label of what the spec is (labels.go): Requirements
	// selects by it.
	label string
	// variables are the config variables the spec reads; all but
	// KUBETEST_CONFIGURATION, ETCD_VERSION_UPGRADE_TO and
	// COREDNS_VERSION_UPGRADE_TO are Kubernetes versions, each of which
	// needs a node image (unless inMemory).
	variables []string
	// conformance is the variable at whose Kubernetes version the spec
	// runs the conformance suite, if it does.
	conformance string
	// testExtension: the spec drives Cluster API's test runtime extension.
	testExtension bool
	// inMemory: the spec's clusters run on CAPD's in-memory backend, so
	// its Kubernetes versions need no node image and nothing of it runs in
	// the container engine (no load balancer either).
	inMemory bool
	// kubeadmBinaries are the variables among variables whose kubeadm the
	// spec's machines mount from the host (suite.Requirement).
	kubeadmBinaries []string
	// previousRelease: the spec upgrades from build.clusterAPI.previous.
	previousRelease bool
	// dualStackManagement: the spec's workload clusters are IPv6-only, so
	// the management cluster must be dual-stack (suite.Requirement).
	dualStackManagement bool
	// waits lists every wait the spec makes, in order, one entry per wait
	// (an interval key waited on twice is listed twice): its default
	// timeout is their sum (see timeouts.go).
	waits []string
	// cleanupWaits are the waits of its cleanup nodes; nil means
	// defaultCleanupWaits.
	cleanupWaits []string
	// files are the spec's own source files, cleanupFiles those of its
	// cleanup beyond cleanup.go: timeouts_test.go finds the waits the code
	// makes there (every spec also runs create.go and waits.go).
	files, cleanupFiles []string
	// upstream is the file of sigs.k8s.io/cluster-api/test that holds the
	// spec, when the spec is upstream's called as it is (upstream.go):
	// timeouts_test.go finds its waits there, and its cleanup's, instead
	// of in files.
	upstream string
}

// defaultCleanupWaits are the waits of a spec's cleanup (cleanup.go):
// the cluster deleted.
var defaultCleanupWaits = []string{"wait-delete-cluster"}

// declared holds every spec's facts, by name.
var declared = map[string]specFacts{}

// declare records f and returns its name, for the spec's code to use. A
// name declared twice, or facts without a name, label, waits or files, is
// a programming error: the package panics when it loads, so no test
// binary or suite can be built on it.
func declare(f specFacts) string {
	var missing []string
	for field, unset := range map[string]bool{"name": f.name == "", "label": f.label == "", "waits": len(f.waits) == 0, "files": len(f.files) == 0} {
		if unset {
			missing = append(missing, field)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		panic(fmt.Sprintf("specs: the facts of spec %q lack %s", f.name, strings.Join(missing, ", ")))
	}
	if _, ok := declared[f.name]; ok {
		panic(fmt.Sprintf("specs: spec %q is declared twice", f.name))
	}
	if f.conformance != "" && !slices.Contains(f.variables, f.conformance) {
		panic(fmt.Sprintf("specs: spec %q runs conformance at %s, which its variables do not list", f.name, f.conformance))
	}
	for _, v := range f.kubeadmBinaries {
		if !slices.Contains(f.variables, v) {
			panic(fmt.Sprintf("specs: spec %q mounts the kubeadm of %s, which its variables do not list", f.name, v))
		}
	}
	declared[f.name] = f
	return f.name
}

// cleanupWaitsOf returns the waits of spec's cleanup nodes.
func (f specFacts) cleanupWaitsOf() []string {
	if f.cleanupWaits == nil {
		return defaultCleanupWaits
	}
	return f.cleanupWaits
}

// declaredSpecs returns every spec's facts, by name.
func declaredSpecs() []specFacts {
	out := make([]specFacts, 0, len(declared))
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		out = append(out, declared[name])
	}
	return out
}
