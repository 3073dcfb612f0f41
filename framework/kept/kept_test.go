package kept

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	// Values a shell would quote differently: spaces, quotes, $.
	want := Env{Name: "explore", RunID: "0a1b2c3d4e5f", ManagementCluster: "capd-e2e-0a1b",
		ClusterctlConfig: "/tmp/a b/clusterctl.yaml", Artifacts: `/tmp/"x"/$HOME`,
		WorkloadClusters: []string{"ns-1/quick-start-x", "ns 2/y"}, CAPISource: "/src/cluster-api", CloudProvider: "external"}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read = %+v, want %+v", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, ErrNotKept) || !strings.Contains(err.Error(), dir) {
		t.Errorf("no file: %v, want ErrNotKept naming %s", err, dir)
	}
	for body, want := range map[string]string{
		`{"name": "x"`: "unexpected EOF",
		`{"name": "x", "runID": "1", "managementCluster": "m", "run_id": "2"}`: `unknown field "run_id"`,
		`{"name": "x", "runID": "1"}`:                                          "managementCluster are required",
	} {
		if err := os.WriteFile(filepath.Join(dir, File), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Read(dir)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), File) {
			t.Errorf("%s: %v, want an error naming %s and saying %q", body, err, File, want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, good := range []string{"explore", "guide", "a", "my-env_2.x"} {
		if err := CheckName(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "-x", "a/b", "a b", "../up", strings.Repeat("a", 64)} {
		if err := CheckName(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("%q: %v, want an error naming it", bad, err)
		}
	}
}

func TestRemoveLeavesArtifacts(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"management.kubeconfig", "workload.kubeconfig", "quick-start-x.kubeconfig", File, "artifacts/junit.e2e_suite.1.xml"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 1 || filepath.Base(left[0]) != "artifacts" {
		t.Errorf("left %v, want the artifacts folder alone", left)
	}
	if err := Remove(dir); err != nil {
		t.Errorf("a second Remove: %v", err)
	}
}
