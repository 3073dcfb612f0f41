package fault

import (
	"strings"
	"testing"
)

func TestInjected(t *testing.T) {
	t.Setenv(Env, "")
	if err := Injected("clusterctl init"); err != nil {
		t.Errorf("unset: %v", err)
	}
	t.Setenv(Env, "install cert-manager's CRDs")
	if err := Injected("clusterctl init"); err != nil {
		t.Errorf("another step: %v", err)
	}
	err := Injected("install cert-manager's CRDs and the substitute controller")
	if err == nil || !strings.Contains(err.Error(), `CAPD_E2E_INJECT_FAULT="install cert-manager's CRDs"`) {
		t.Errorf("the step named: %v", err)
	}
}
