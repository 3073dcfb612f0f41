package specs

import (
	"slices"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// The spec tree as a suite would build it. PreviewSpecs walks it without
// running anything, so the input getters are never called; what it checks
// is what Ginkgo only checks at tree construction: that each spec's
// decorators (labels, SpecTimeout on an interruptible body) are valid.
var _ = Describe("capd-e2e specs", func() {
	never := func() CommonInput { panic("an input getter was called while previewing") }
	QuickStartSpec(func() QuickStartSpecInput { return QuickStartSpecInput{CommonInput: never()} })
	ClusterUpgradeSpec(func() ClusterUpgradeSpecInput { return ClusterUpgradeSpecInput{CommonInput: never()} })
	MachineHealthCheckSpec(func() MachineHealthCheckSpecInput {
		return MachineHealthCheckSpecInput{CommonInput: never()}
	})
	MachinePoolSpec(func() MachinePoolSpecInput { return MachinePoolSpecInput{CommonInput: never()} })
	MachineDeploymentRolloutSpec(func() MachineDeploymentRolloutSpecInput {
		return MachineDeploymentRolloutSpecInput{CommonInput: never()}
	})
	SelfHostedSpec(func() SelfHostedSpecInput { return SelfHostedSpecInput{CommonInput: never()} })
	RuntimeSDKSpec(func() RuntimeSDKSpecInput { return RuntimeSDKSpecInput{CommonInput: never()} })
	ClusterctlUpgradeSpec(func() ClusterctlUpgradeSpecInput { return ClusterctlUpgradeSpecInput{CommonInput: never()} })
})

func TestSpecTree(t *testing.T) {
	report := PreviewSpecs("capd-e2e specs")
	if !report.SuiteSucceeded {
		t.Fatalf("the spec tree does not build: %v", report.SpecialSuiteFailureReasons)
	}
	vocabulary := []string{LabelPRBlocking, LabelClusterClass, LabelK8sUpgrade, LabelQuickStart, LabelRemediation, LabelMachinePool,
		LabelMDRollout, LabelSelfHosted, LabelClusterctl, LabelRuntimeSDK, LabelClusterctlUpgrade, LabelSlow}
	want := map[string][]string{
		"quick-start":        {LabelQuickStart},
		"upgrade":            {LabelK8sUpgrade, LabelSlow},
		"remediation":        {LabelRemediation},
		"machinepool":        {LabelMachinePool},
		"md-rollout":         {LabelMDRollout},
		"self-hosted":        {LabelSelfHosted, LabelClusterctl, LabelSlow},
		"runtime-sdk":        {LabelRuntimeSDK, LabelK8sUpgrade},
		"clusterctl-upgrade": {LabelClusterctlUpgrade, LabelClusterctl},
	}
	if len(report.SpecReports) != len(want) {
		t.Fatalf("%d specs, want %d", len(report.SpecReports), len(want))
	}
	seen := map[string]bool{}
	for _, s := range report.SpecReports {
		labels := s.Labels()
		for _, l := range labels {
			if !slices.Contains(vocabulary, l) {
				t.Errorf("spec %q has label %q, which is not in the vocabulary of labels.go", s.FullText(), l)
			}
		}
		for key, w := range want {
			if len(labels) > 0 && labels[0] == w[0] {
				seen[key] = true
				if !slices.Equal(labels, w) {
					t.Errorf("spec %q has labels %v, want %v", s.FullText(), labels, w)
				}
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("specs found by their first label: %v, want all of %v", seen, want)
	}
}

func TestPreloadImages(t *testing.T) {
	c := &clusterctl.E2EConfig{
		Variables: map[string]string{varDockerPreloadImages: `["a:1", "b:2"]`},
		Images:    []clusterctl.ContainerImage{{Name: "registry.k8s.io/cluster-api/capd-manager:v1.14.2"}},
	}
	if got, want := preloadImages(c), `["a:1","b:2","registry.k8s.io/cluster-api/capd-manager:v1.14.2"]`; got != want {
		t.Errorf("preloadImages = %s, want %s", got, want)
	}
	c.Variables[varDockerPreloadImages] = "[]"
	if got, want := preloadImages(c), `["registry.k8s.io/cluster-api/capd-manager:v1.14.2"]`; got != want {
		t.Errorf("preloadImages with an empty list = %s, want %s", got, want)
	}
}

func TestLoadBalancerBackendReady(t *testing.T) {
	node := func(name string, ready bool, excluded bool) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if excluded {
			n.Labels[corev1.LabelNodeExcludeBalancers] = ""
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
		return n
	}
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  bool
		why   string
	}{
		{"no nodes", nil, false, "no nodes"},
		{"only a Ready control plane, excluded", []corev1.Node{node("cp", true, true)}, false, "cp excluded"},
		{"worker not Ready yet", []corev1.Node{node("cp", true, true), node("w", false, false)}, false, "cp excluded, w not Ready"},
		{"worker Ready", []corev1.Node{node("cp", true, true), node("w", true, false)}, true, ""},
		{"a control plane without the label counts", []corev1.Node{node("cp", true, false)}, true, ""},
	} {
		got, why := loadBalancerBackendReady(tc.nodes)
		if got != tc.want || why != tc.why {
			t.Errorf("%s: got (%v, %q), want (%v, %q)", tc.name, got, why, tc.want, tc.why)
		}
	}
}

func TestOwnerAssertionsOfAnUnusedMachineTemplate(t *testing.T) {
	cluster := metav1.OwnerReference{Kind: "Cluster", APIVersion: clusterv1.GroupVersion.String()}
	a := ownerAssertions(false, map[string]bool{"DevMachineTemplate/c-md-0-upgrade-to": false})["DevMachineTemplate"]
	if err := a(types.NamespacedName{Namespace: "ns", Name: "c-md-0-upgrade-to"}, nil); err != nil {
		t.Errorf("an unused template without owners: %v", err)
	}
	if err := a(types.NamespacedName{Namespace: "ns", Name: "c-md-0-upgrade-to"}, []metav1.OwnerReference{cluster}); err != nil {
		t.Errorf("a template no longer used, still owned by the Cluster: %v", err)
	}
	machineSet := metav1.OwnerReference{Kind: "MachineSet", APIVersion: clusterv1.GroupVersion.String()}
	if err := a(types.NamespacedName{Namespace: "ns", Name: "c-md-0-upgrade-to"}, []metav1.OwnerReference{machineSet}); err == nil {
		t.Error("an unused template with a wrong owner passed")
	}
	if err := a(types.NamespacedName{Namespace: "ns", Name: "c-md-0"}, nil); err == nil {
		t.Error("a used template without owners passed")
	}
	if err := a(types.NamespacedName{Namespace: "ns", Name: "c-md-0"}, []metav1.OwnerReference{cluster}); err != nil {
		t.Errorf("a used template owned by the Cluster: %v", err)
	}
}

func TestOwnerAssertionsOfAClassicMachinePool(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "c-mp-0"}
	mp := metav1.OwnerReference{Kind: "MachinePool", APIVersion: clusterv1.GroupVersion.String(), Controller: ptr.To(true)}
	cluster := metav1.OwnerReference{Kind: "Cluster", APIVersion: clusterv1.GroupVersion.String()}
	for _, tc := range []struct {
		topology bool
		owners   []metav1.OwnerReference
		ok       bool
	}{
		{topology: false, owners: []metav1.OwnerReference{mp}, ok: true},
		{topology: false, owners: []metav1.OwnerReference{mp, cluster}, ok: false},
		{topology: true, owners: []metav1.OwnerReference{mp, cluster}, ok: true},
		{topology: true, owners: []metav1.OwnerReference{mp}, ok: false},
	} {
		a := ownerAssertions(tc.topology, nil)
		for _, kind := range []string{"DevMachinePool", "KubeadmConfig"} {
			if err := a[kind](key, tc.owners); (err == nil) != tc.ok {
				t.Errorf("topology %t, %s owned by %v: %v, want ok %t", tc.topology, kind, tc.owners, err, tc.ok)
			}
		}
	}
}

func TestHookKeyAndNextMinor(t *testing.T) {
	if got := hookKey("BeforeClusterUpgrade", "v1.36.3", "v1.37.2+k3s1"); got != "BeforeClusterUpgrade-v1.36.3-v1.37.2_k3s1" {
		t.Errorf("hookKey = %q", got)
	}
	if got := hookKey("BeforeClusterCreate"); got != "BeforeClusterCreate" {
		t.Errorf("hookKey without attributes = %q", got)
	}
	for in, want := range map[string]string{"v1.37.2": "v1.38.0", "v1.9.0": "v1.10.0", "bogus": "bogus"} {
		if got := nextMinor(in); got != want {
			t.Errorf("nextMinor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOwnerAssertionsOfAnOwnerlessConfigMap(t *testing.T) {
	crs := metav1.OwnerReference{Kind: "ClusterResourceSet", APIVersion: "addons.cluster.x-k8s.io/v1beta2"}
	a := ownerAssertions(true, map[string]bool{"ConfigMap/c-ext-test-extension-hookresponses": true})["ConfigMap"]
	if err := a(types.NamespacedName{Namespace: "ns", Name: "c-ext-test-extension-hookresponses"}, nil); err != nil {
		t.Errorf("the hook ConfigMap without owners: %v", err)
	}
	if err := a(types.NamespacedName{Namespace: "ns", Name: "c-ext-test-extension-hookresponses"}, []metav1.OwnerReference{crs}); err == nil {
		t.Error("the hook ConfigMap with an owner passed")
	}
	if err := a(types.NamespacedName{Namespace: "ns", Name: "other"}, nil); err == nil {
		t.Error("another ConfigMap without its ClusterResourceSet owner passed: upstream's assertion was lost")
	}
}

func TestRolledOut(t *testing.T) {
	machine := func(name, node string) clusterv1.Machine {
		m := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if node != "" {
			m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node}
		}
		return m
	}
	ro := mdRollout{name: "md-0", replicas: 2, old: map[string]string{"a": "node-a", "b": "node-b"}}
	for _, tc := range []struct {
		name     string
		machines []clusterv1.Machine
		want     string
	}{
		{"not started", []clusterv1.Machine{machine("a", "node-a"), machine("b", "node-b")},
			"md-0: 0 new Machines of 2, old ones left: a, b"},
		{"a new Machine without a Node", []clusterv1.Machine{machine("a", "node-a"), machine("b", "node-b"), machine("c", "")},
			"md-0: 1 new Machines of 2, without a Node: c, old ones left: a, b"},
		{"half way", []clusterv1.Machine{machine("b", "node-b"), machine("c", "node-c"), machine("d", "")},
			"md-0: 2 new Machines of 2, without a Node: d, old ones left: b"},
		{"new Machines, one old left", []clusterv1.Machine{machine("b", "node-b"), machine("c", "node-c"), machine("d", "node-d")},
			"md-0: 2 new Machines of 2, old ones left: b"},
		{"one new Machine too few", []clusterv1.Machine{machine("c", "node-c")}, "md-0: 1 new Machines of 2"},
		{"done", []clusterv1.Machine{machine("c", "node-c"), machine("d", "node-d")}, ""},
		{"one too many", []clusterv1.Machine{machine("c", "node-c"), machine("d", "node-d"), machine("e", "node-e")}, "md-0: 3 new Machines of 2"},
	} {
		if got := rolledOut(ro, tc.machines); got != tc.want {
			t.Errorf("%s: rolledOut = %q, want %q", tc.name, got, tc.want)
		}
	}
}
