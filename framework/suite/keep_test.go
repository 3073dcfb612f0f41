package suite

import (
	"strings"
	"testing"
)

func TestExistingWorkloadCluster(t *testing.T) {
	t.Setenv(EnvWorkloadCluster, "")
	if got, err := ExistingWorkloadCluster(); got != nil || err != nil {
		t.Errorf("unset: got %v, %v; want nil, nil", got, err)
	}
	t.Setenv(EnvWorkloadCluster, "ns-1/quick-start-abc")
	got, err := ExistingWorkloadCluster()
	if err != nil || got == nil || got.Namespace != "ns-1" || got.Name != "quick-start-abc" {
		t.Errorf("ns-1/quick-start-abc: got %v, %v", got, err)
	}
	for _, bad := range []string{"quick-start-abc", "/c", "ns/", "ns/a/b", "ns/a ns/b"} {
		t.Setenv(EnvWorkloadCluster, bad)
		got, err := ExistingWorkloadCluster()
		if err == nil || got != nil {
			t.Errorf("%q: got %v, %v; want an error", bad, got, err)
			continue
		}
		if !strings.Contains(err.Error(), EnvWorkloadCluster) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: the error %q does not name the variable and its value", bad, err)
		}
	}
}
