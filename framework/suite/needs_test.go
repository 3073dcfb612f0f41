package suite

import (
	"slices"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/suite/selection"
)

// TestImagesNeededPerSpec checks, on the harness's own config, which
// images each kind of spec makes a run need and who is named for each:
// the PR gate needs one Kubernetes version, an upgrade two, the runtime
// SDK spec the test extension, clusterctl upgrade the previous release.
func TestImagesNeededPerSpec(t *testing.T) {
	quickStart := Requirement{Spec: "quick-start", Label: "quick-start", KubernetesVersions: []string{"KUBERNETES_VERSION"}}
	upgrade := Requirement{Spec: "k8s-upgrade", Label: "K8s-Upgrade",
		KubernetesVersions: []string{"KUBERNETES_VERSION_UPGRADE_FROM", "KUBERNETES_VERSION_UPGRADE_TO"}}
	runtimeSDK := upgrade
	runtimeSDK.Spec, runtimeSDK.TestExtension = "k8s-upgrade-with-runtimesdk", true
	clusterctlUpgrade := Requirement{Spec: "clusterctl-upgrade", Label: "clusterctl-upgrade",
		KubernetesVersions: []string{"KUBERNETES_VERSION"}, PreviousRelease: true}
	// An in-memory spec's clusters are CAPD's fakes: the management
	// cluster and the test extension, nothing for the clusters themselves.
	scale := Requirement{Spec: "scale", Label: "in-memory-scale", TestExtension: true, InMemory: true}
	conformance := Requirement{Spec: "k8s-conformance", Label: "Conformance",
		KubernetesVersions: []string{"KUBERNETES_VERSION"}, Conformance: []string{"KUBERNETES_VERSION"}}

	load := func(t *testing.T) *config.Config {
		t.Helper()
		path, err := config.DefaultPath()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load(t)
	node := func(variable string) string {
		v, _ := cfg.LookupVariable(variable)
		k, err := cfg.Build.KubernetesVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		return k.NodeImage
	}
	from, to := node("KUBERNETES_VERSION_UPGRADE_FROM"), node("KUBERNETES_VERSION_UPGRADE_TO")
	if from == to {
		t.Fatalf("the config upgrades from and to %s", from)
	}
	ext := cfg.Build.ClusterAPI.Images.TestExtension
	lb := cfg.Build.LoadBalancer.Image
	prevCore := config.WithTag(cfg.Build.ClusterAPI.Images.Core, cfg.Build.ClusterAPI.Previous.Version)
	gate, err := cfg.Build.KubernetesVersion(cfg.Variables["KUBERNETES_VERSION"])
	if err != nil {
		t.Fatal(err)
	}
	conformanceImage, agnhost := gate.ConformanceImage(), gate.TestImageRefs()[0]
	if conformanceImage == "" || !strings.Contains(agnhost, "/e2e-test-images/agnhost:") {
		t.Fatalf("the gate's version %s has no conformance image or agnhost first (%q, %q)", gate.Version, conformanceImage, agnhost)
	}

	tests := []struct {
		name       string
		reqs       []Requirement
		management bool
		// want: who needs each of these; absent: not needed at all.
		want   map[string][]string
		absent []string
	}{
		{name: "PR gate", reqs: []Requirement{quickStart}, management: true,
			want: map[string][]string{
				node("KUBERNETES_VERSION"):            {selection.SuiteSetup, "quick-start"},
				lb:                                    {"quick-start"},
				cfg.Build.ClusterAPI.Images.Core:      {selection.SuiteSetup},
				cfg.Build.CertManager.SubstituteImage: {selection.SuiteSetup},
			},
			absent: []string{ext, prevCore, conformanceImage, agnhost}},
		{name: "conformance", reqs: []Requirement{conformance}, management: true,
			want:   map[string][]string{conformanceImage: {"k8s-conformance"}, agnhost: {"k8s-conformance"}, lb: {"k8s-conformance"}},
			absent: []string{ext, prevCore}},
		{name: "upgrade", reqs: []Requirement{upgrade}, management: true,
			want:   map[string][]string{from: {"k8s-upgrade"}, lb: {"k8s-upgrade"}},
			absent: []string{ext, prevCore}},
		{name: "runtime SDK", reqs: []Requirement{runtimeSDK}, management: true,
			want:   map[string][]string{ext: {"k8s-upgrade-with-runtimesdk"}, from: {"k8s-upgrade-with-runtimesdk"}},
			absent: []string{prevCore}},
		{name: "clusterctl upgrade", reqs: []Requirement{clusterctlUpgrade}, management: true,
			want:   map[string][]string{prevCore: {"clusterctl-upgrade"}, cfg.Build.ClusterAPI.Images.Core: {selection.SuiteSetup, "clusterctl-upgrade"}},
			absent: []string{ext}},
		{name: "in-memory", reqs: []Requirement{scale}, management: true,
			want:   map[string][]string{ext: {"scale"}, node("KUBERNETES_VERSION_MANAGEMENT"): {selection.SuiteSetup}},
			absent: []string{lb, from, prevCore, conformanceImage}},
		{name: "existing management cluster", reqs: []Requirement{quickStart}, management: false,
			want:   map[string][]string{node("KUBERNETES_VERSION"): {"quick-start"}, lb: {"quick-start"}},
			absent: []string{cfg.Build.ClusterAPI.Images.Core, ext, prevCore}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t)
			dropUnneeded(cfg, tt.reqs)
			got := imagesNeeded(cfg, tt.reqs, tt.management)
			sel := selection.Selection{Images: got}
			if !slices.IsSortedFunc(got, func(a, b selection.Image) int { return strings.Compare(a.Ref, b.Ref) }) {
				t.Errorf("images not sorted: %v", sel.Refs())
			}
			for ref, who := range tt.want {
				if g := sel.NeededBy(ref); !slices.Equal(g, who) {
					t.Errorf("%s: needed by %q, want %q", ref, g, who)
				}
			}
			for _, ref := range tt.absent {
				if g := sel.NeededBy(ref); g != nil {
					t.Errorf("%s: needed by %q, want not needed", ref, g)
				}
			}
		})
	}
}

// TestImagesNeededWithoutRequirements: a suite that declares no
// requirements keeps everything the config names (nothing is dropped), and
// setup needs it all.
func TestImagesNeededWithoutRequirements(t *testing.T) {
	path, err := config.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sel := selection.Selection{Images: imagesNeeded(cfg, nil, true)}
	for _, ref := range []string{cfg.Build.LoadBalancer.Image, cfg.Build.ClusterAPI.Images.TestExtension,
		config.WithTag(cfg.Build.ClusterAPI.Images.Docker, cfg.Build.ClusterAPI.Previous.Version)} {
		if who := sel.NeededBy(ref); !slices.Equal(who, []string{selection.SuiteSetup}) {
			t.Errorf("%s: needed by %q, want setup's", ref, who)
		}
	}
}

func TestDropUnneeded(t *testing.T) {
	path, err := config.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := dropUnneeded(cfg, []Requirement{{Spec: "quick-start"}})
	if len(lines) != 2 || cfg.Build.ClusterAPI.Previous != nil || cfg.Build.ClusterAPI.Images.TestExtension != "" {
		t.Errorf("dropped %q; previous %v, test extension %q left", lines, cfg.Build.ClusterAPI.Previous, cfg.Build.ClusterAPI.Images.TestExtension)
	}
	cfg, _ = config.Load(path)
	if lines := dropUnneeded(cfg, []Requirement{{Spec: "a", TestExtension: true}, {Spec: "b", PreviousRelease: true}}); len(lines) != 0 {
		t.Errorf("dropped %q, though both are needed", lines)
	}
}
