package suite

import (
	"slices"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// TestKubeadmVersions: setup copies the kubeadm of each version the
// selected specs mount, once, and none when no spec mounts one (the
// phase is then skipped).
func TestKubeadmVersions(t *testing.T) {
	cfg, err := config.Load("../../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	to, _ := cfg.LookupVariable(config.VarKubernetesVersionUpgradeTo)
	for name, tc := range map[string]struct {
		reqs []Requirement
		want []string
	}{
		"none":  {[]Requirement{{Spec: "quick-start"}}, nil},
		"one":   {[]Requirement{{Spec: "a", KubeadmBinaries: []string{config.VarKubernetesVersionUpgradeTo}}}, []string{to}},
		"twice": {[]Requirement{{Spec: "a", KubeadmBinaries: []string{config.VarKubernetesVersionUpgradeTo}}, {Spec: "b", KubeadmBinaries: []string{config.VarKubernetesVersionUpgradeTo}}}, []string{to}},
	} {
		s := &setup{in: SetupInput{Requirements: tc.reqs}, env: &Environment{cfg: cfg}}
		if got := s.kubeadmVersions(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: kubeadmVersions() = %v, want %v", name, got, tc.want)
		}
	}
}
