package specs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestRequirementsListWhatTheCodeUses reads the specs' sources for the
// interval keys and variables they use, and checks each spec's file and
// the shared creation code are covered by its Requirement.
func TestRequirementsListWhatTheCodeUses(t *testing.T) {
	intervalRE := regexp.MustCompile(`(?:intervals\(|durations\(|wait\(\w+, )"([a-z-]+)"`)
	variableRE := regexp.MustCompile(`variable\((var[A-Za-z]+)\)`)
	used := func(file string) (intervals, vars []string) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range intervalRE.FindAllStringSubmatch(string(data), -1) {
			intervals = append(intervals, m[1])
		}
		for _, m := range variableRE.FindAllStringSubmatch(string(data), -1) {
			vars = append(vars, m[1])
		}
		return intervals, vars
	}
	varNames := map[string]string{
		"varKubernetesVersion": varKubernetesVersion, "varKubernetesVersionUpgradeFrom": varKubernetesVersionUpgradeFrom,
		"varKubernetesVersionUpgradeTo": varKubernetesVersionUpgradeTo,
	}
	common, _ := used("common.go")
	waits, _ := used("waits.go")
	common = append(common, waits...)
	for file, specNames := range map[string][]string{
		"quick_start.go":          {"quick-start"},
		"cloud_provider.go":       {"quick-start"},
		"cluster_upgrade.go":      {"k8s-upgrade"},
		"machine_health_check.go": {"md-remediation", "kcp-remediation"},
		"self_hosted.go":          {"self-hosted"},
	} {
		intervals, vars := used(filepath.Clean(file))
		for _, name := range specNames {
			var r *Requirement
			for _, req := range Requirements() {
				if req.Spec == name {
					r = &req
				}
			}
			if r == nil {
				t.Fatalf("no Requirement for spec %s", name)
			}
			for _, k := range append(common, intervals...) {
				if !slices.Contains(r.Intervals, k) {
					t.Errorf("%s (%s) waits with interval %q, which its Requirement does not list", name, file, k)
				}
			}
			for _, v := range vars {
				if !slices.Contains(r.Variables, varNames[v]) {
					t.Errorf("%s (%s) reads variable %s, which its Requirement does not list", name, file, v)
				}
			}
		}
	}
	if got := Requirements(LabelQuickStart); len(got) != 1 || got[0].Spec != "quick-start" {
		t.Errorf("Requirements(quick-start) = %+v", got)
	}
	if got := Requirements(LabelRemediation); len(got) != 2 {
		t.Errorf("Requirements(remediation) = %+v", got)
	}
}
