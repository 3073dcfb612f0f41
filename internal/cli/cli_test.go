package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/suite"
)

func TestExitCodes(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		code int
		want string
	}{
		"unknown command":           {args: []string{"frob"}, code: 2, want: `unknown command "frob"`},
		"unknown flag":              {args: []string{"clean", "--frob"}, code: 2, want: "unknown flag: --frob"},
		"missing argument":          {args: []string{"secrets", "scan"}, code: 2, want: "requires at least 1 arg"},
		"exclusive flags":           {args: []string{"clean", "--list", "--check", "x"}, code: 2, want: "none of the others"},
		"load without --cluster":    {args: []string{"load", "img"}, code: 2, want: `"cluster" not set`},
		"a boolean of another kind": {args: []string{"run"}, env: map[string]string{"SKIP_RESOURCE_CLEANUP": "yes"}, code: 2, want: `SKIP_RESOURCE_CLEANUP="yes" is not a boolean`},
		"a bad duration":            {args: []string{"run"}, env: map[string]string{"GRACE_PERIOD": "10"}, code: 2, want: `GRACE_PERIOD="10" is not a duration`},
		"no such suite":             {args: []string{"run", "--suite", "/nonexistent"}, code: 2, want: "--suite /nonexistent: not a directory"},
		"help":                      {args: []string{"--help"}, code: 0},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			code := execute(context.Background(), NewCommand(&out, &errOut), tc.args, &errOut)
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", code, errOut.String(), tc.code, tc.want)
			}
		})
	}
}

func TestRunFlagsFromTheEnvironment(t *testing.T) {
	t.Setenv("GINKGO_SKIP", "a  b")
	t.Setenv("GINKGO_NODES", "2")
	t.Setenv("USE_EXISTING_CLUSTER", "true")
	t.Setenv("GINKGO_LABEL_FILTER", "")
	cmd := newRunCommand(streams{})
	f := cmd.Flags()
	if got, _ := f.GetStringSlice("skip"); strings.Join(got, ",") != "a,b" {
		t.Errorf("--skip %q", got)
	}
	if got, _ := f.GetInt("nodes"); got != 2 {
		t.Errorf("--nodes %d", got)
	}
	if got, _ := f.GetBool("use-existing-cluster"); !got {
		t.Error("--use-existing-cluster false")
	}
	if got, _ := f.GetString("label-filter"); got != "PR-Blocking" {
		t.Errorf("--label-filter %q; want PR-Blocking when GINKGO_LABEL_FILTER is empty", got)
	}
}

func TestGinkgoArgs(t *testing.T) {
	r := &supervisor{o: runOptions{artifacts: "/a", config: "/c.yaml", nodes: 2, timeout: 3600e9, labelFilter: "x && y", skip: []string{"s1", "s2"}, useExisting: true}}
	got := strings.Join(r.ginkgoArgs("e2e.test", false), " ")
	for _, want := range []string{"--nodes=2", "--timeout=1h0m0s", "--no-color", "--label-filter=x && y", "--skip=s1 --skip=s2",
		"--output-dir=/a", "e2e.test -- -e2e.config=/c.yaml -e2e.artifacts-folder=/a -e2e.skip-resource-cleanup=false -e2e.use-existing-cluster=true"} {
		if !strings.Contains(got, want) {
			t.Errorf("ginkgo args %q lack %q", got, want)
		}
	}
	if strings.Contains(strings.Join(r.ginkgoArgs("e2e.test", true), " "), "--no-color") {
		t.Error("--no-color on a terminal")
	}
}

func TestTailWriter(t *testing.T) {
	w := newTailWriter(2)
	_, _ = w.Write([]byte("one\ntwo\nthr"))
	_, _ = w.Write([]byte("ee\nfour"))
	if got := w.String(); got != "three\nfour" {
		t.Errorf("tail %q", got)
	}
}

func TestEnvSupervisedIsTheSuites(t *testing.T) {
	if envSupervised != suite.EnvSupervised {
		t.Errorf("envSupervised %q, framework/suite's %q", envSupervised, suite.EnvSupervised)
	}
}
