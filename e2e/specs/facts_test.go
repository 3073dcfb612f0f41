package specs

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDeclareRejects: a second declaration of a name, facts without what
// every spec has, or conformance at a variable the spec does not read,
// panic when the package loads, naming the spec; none is recorded.
func TestDeclareRejects(t *testing.T) {
	before := len(declared)
	for name, tc := range map[string]struct {
		f    specFacts
		want string
	}{
		"twice":   {specFacts{name: "quick-start", label: LabelQuickStart, waits: []string{"wait-cluster"}, files: []string{"x.go"}}, `spec "quick-start" is declared twice`},
		"bare":    {specFacts{name: "new-spec"}, `the facts of spec "new-spec" lack files, label, waits`},
		"no name": {specFacts{label: LabelQuickStart, waits: []string{"wait-cluster"}, files: []string{"x.go"}}, `lack name`},
		"conformance": {specFacts{name: "new-spec", label: LabelConformance, waits: []string{"wait-conformance"}, files: []string{"x.go"},
			variables: []string{varKubernetesVersion}, conformance: varKubernetesVersionUpgradeTo}, "runs conformance at KUBERNETES_VERSION_UPGRADE_TO, which its variables do not list"},
		"kubeadm": {specFacts{name: "new-spec", label: LabelKubeadmJoinOldNodes, waits: []string{"wait-cluster"}, files: []string{"x.go"},
			variables: []string{varKubernetesVersion}, kubeadmBinaries: []string{varKubernetesVersionUpgradeTo}}, "mounts the kubeadm of KUBERNETES_VERSION_UPGRADE_TO, which its variables do not list"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("declare panicked with %v, want %q", r, tc.want)
				}
			}()
			declare(tc.f)
		})
	}
	if len(declared) != before {
		t.Errorf("declared grew from %d to %d specs", before, len(declared))
	}
}

// TestEverySpecDeclared: the specs this package exports are all declared,
// each once, with files that exist.
func TestEverySpecDeclared(t *testing.T) {
	want := []string{"cluster-deletion", "clusterclass-changes", "clusterclass-rollout", "clusterctl-upgrade", "dual-stack", "in-place-update", "ipv6", "k8s-chained-upgrade-with-runtimesdk", "k8s-conformance", "k8s-upgrade", "k8s-upgrade-and-conformance",
		"k8s-upgrade-with-runtimesdk", "kcp-adoption", "kcp-infra-adoption", "kcp-md-rollout", "kcp-remediation", "kcp-remediation-bootstrap", "kubeadm-join-old-nodes", "machine-pool", "md-remediation", "md-rollout", "md-scale", "node-drain", "quick-start", "scale", "self-hosted"}
	var got []string
	for _, f := range declaredSpecs() {
		got = append(got, f.name)
		for _, file := range slices.Concat(f.files, f.cleanupFiles) {
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: declared file %s: %v", f.name, file, err)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("declared specs = %v\nwant %v", got, want)
	}
}
