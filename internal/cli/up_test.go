package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/kept"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

func TestEnvironmentVariablesAreTheSuites(t *testing.T) {
	for ours, theirs := range map[string]string{envKeep: suite.EnvKeep, envEnvDir: suite.EnvEnvDir, envWorkload: suite.EnvWorkloadCluster} {
		if ours != theirs {
			t.Errorf("%q, framework/suite's %q", ours, theirs)
		}
	}
}

func TestUpDownIterateUsage(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"a name that is a path":   {args: []string{"up", "--name", "../x"}, want: `environment name "../x"`},
		"a name from NAME":        {args: []string{"down"}, env: map[string]string{"NAME": "a b"}, want: `environment name "a b"`},
		"CCM not a boolean":       {args: []string{"up"}, env: map[string]string{"CCM": "no way"}, want: `CCM="no way" is not a boolean`},
		"a negative count":        {args: []string{"up", "--worker-machine-count", "-1"}, want: "--worker-machine-count -1"},
		"iterate without a tree":  {args: []string{"iterate"}, env: map[string]string{"CAPI_SOURCE_DIR": ""}, want: "CAPI_SOURCE_DIR) is unset"},
		"iterate, a missing tree": {args: []string{"iterate", "--capi-source", "/nonexistent/capi"}, want: "--capi-source /nonexistent/capi"},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			code := execute(context.Background(), NewCommand(&out, &errOut), tc.args, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit code %d, stderr %q; want 2 and %q", code, errOut.String(), tc.want)
			}
		})
	}
}

// iterate on a name nothing was brought up under says so, before it
// touches the engine or a cluster.
func TestIterateWithoutEnvironment(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := execute(context.Background(), NewCommand(&out, &errOut),
		[]string{"iterate", "--name", "nothing", "--dir", filepath.Join(dir, "nothing"), "--capi-source", dir, "--suite", dir}, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `no environment "nothing" is up`) {
		t.Errorf("exit code %d, stderr %q", code, errOut.String())
	}
}

// iterate from another tree than the environment's refuses, naming both.
func TestIterateFromAnotherTree(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "e")
	if err := os.MkdirAll(env, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := kept.Write(env, kept.Env{Name: "e", RunID: "r", ManagementCluster: "m", CAPISource: "/src/capi"}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := execute(context.Background(), NewCommand(&out, &errOut),
		[]string{"iterate", "--name", "e", "--dir", env, "--capi-source", dir, "--suite", dir}, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `"e" runs Cluster API from /src/capi, not `+dir) {
		t.Errorf("exit code %d, stderr %q", code, errOut.String())
	}
}

// Two commands on one environment: the second is refused while the first
// holds its lock.
func TestEnvironmentLock(t *testing.T) {
	o := envOptions{name: "e", dir: filepath.Join(t.TempDir(), "e")}
	unlock, err := o.lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.lock(); err == nil || !strings.Contains(err.Error(), `environment "e" is busy`) {
		t.Errorf("a second lock: %v, want busy", err)
	}
	unlock()
	unlock2, err := o.lock()
	if err != nil {
		t.Errorf("after unlock: %v", err)
	} else {
		unlock2()
	}
}
