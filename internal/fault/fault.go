// Package fault injects failures into the harness's own steps for its
// fault-injection tests (`make test-faults`): a step whose name contains
// the value of CAPD_E2E_INJECT_FAULT fails instead of running, so that the
// failure path of every later step, and the teardown, are the real ones.
//
// It is internal: it is how this project tests itself, not part of what a
// provider uses.
package fault

import (
	"fmt"
	"os"
	"strings"
)

// Env names the environment variable that selects the step to fail.
const Env = "CAPD_E2E_INJECT_FAULT"

// Injected returns an error when the step named step is to fail, and nil
// otherwise (always nil when Env is unset or empty).
func Injected(step string) error {
	v := os.Getenv(Env)
	if v == "" || !strings.Contains(step, v) {
		return nil
	}
	return fmt.Errorf("fault injected by %s=%q", Env, v)
}
