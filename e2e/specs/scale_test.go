package specs

import (
	"strings"
	"testing"

	"sigs.k8s.io/cluster-api/test/infrastructure/kind"
)

func TestTestExtensionUpgradeTarget(t *testing.T) {
	known := []string{"v1.35.8", "v1.36.1", "v1.36.4", "v1.37.0"}
	for _, tc := range []struct{ to, want, err string }{
		{to: "v1.37.2", want: "v1.37.0"}, // the config's: a patch the mapper does not know
		{to: "v1.37.0", want: "v1.37.0"},
		{to: "v1.36.3", want: "v1.36.4"},
		{to: "v1.38.1", want: "v1.38.1"}, // a newer minor: the extension appends it
		{to: "v1.34.2", err: "knows no v1.34 release"},
		{to: "latest", err: `"latest"`},
	} {
		got, err := testExtensionUpgradeTarget(tc.to, known)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: (%q, %v), want an error with %q", tc.to, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: (%q, %v), want %q", tc.to, got, err, tc.want)
		}
	}
	// With the mapper this module builds with, the config's upgrade target
	// has a plan.
	if got, err := testExtensionUpgradeTarget("v1.37.2", kind.GetKubernetesVersions()); err != nil || !strings.HasPrefix(got, "v1.37.") {
		t.Errorf("v1.37.2 with kind's mapper: (%q, %v)", got, err)
	}
}
