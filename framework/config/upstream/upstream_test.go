package upstream

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

const repoConfig = "../../../config/e2e.yaml"

func TestE2EConfigMatchesOurs(t *testing.T) {
	ours, err := config.Load(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	up, err := E2EConfig(ours)
	if err != nil {
		t.Fatalf("E2EConfig: %v", err)
	}
	if up.ManagementClusterName != ours.ManagementClusterName {
		t.Errorf("ManagementClusterName = %q, want %q", up.ManagementClusterName, ours.ManagementClusterName)
	}
	if !maps.Equal(up.Variables, ours.Variables) {
		t.Errorf("Variables differ:\nupstream %v\nours     %v", up.Variables, ours.Variables)
	}
	if !reflect.DeepEqual(up.Intervals, ours.IntervalsByKey) {
		t.Errorf("Intervals differ:\nupstream %v\nours     %v", up.Intervals, ours.IntervalsByKey)
	}
	if len(up.Images) != len(ours.Images) {
		t.Fatalf("%d images, want %d", len(up.Images), len(ours.Images))
	}
	for i, img := range up.Images {
		if img.Name != ours.Images[i].Name || string(img.LoadBehavior) != string(ours.Images[i].LoadBehavior) {
			t.Errorf("Images[%d] = %+v, want %+v", i, img, ours.Images[i])
		}
	}
	if len(up.Providers) != len(ours.Providers) {
		t.Fatalf("%d providers, want %d", len(up.Providers), len(ours.Providers))
	}
	out := ours.OutputDir()
	for _, p := range up.Providers {
		for _, v := range p.Versions {
			if v.Type != clusterctl.URLSource {
				t.Errorf("provider %s %s: type %q, want url", p.Name, v.Name, v.Type)
			}
			if !strings.HasPrefix(v.Value, out+string(filepath.Separator)) {
				t.Errorf("provider %s %s: value %q is not under %s", p.Name, v.Name, v.Value, out)
			}
		}
	}
	// Intervals agree with upstream's lookup, fallback included.
	timeout, poll, err := ours.Intervals("kcp-remediation", "wait-cluster")
	if err != nil {
		t.Fatal(err)
	}
	got := up.GetIntervals("kcp-remediation", "wait-cluster")
	if len(got) != 2 || mustDuration(t, got[0]) != timeout || mustDuration(t, got[1]) != poll {
		t.Errorf("GetIntervals = %v, ours = %v, %v", got, timeout, poll)
	}
	// Without the rendered files, upstream's Validate refuses the config:
	// the reason E2EConfig leaves Validate to the caller.
	if err := up.Validate(); err == nil && !filesExist(ours) {
		t.Error("upstream Validate() = nil although the provider files are not rendered")
	}
}

// TestUpstreamLoadE2EConfig runs upstream's own loader on a copy of the
// repo config next to stub provider files, as the suite will after
// `make images`.
func TestUpstreamLoadE2EConfig(t *testing.T) {
	ours, err := config.Load(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	path := filepath.Join(root, "config", "e2e.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, ours.Raw(), 0o644); err != nil {
		t.Fatal(err)
	}
	copied, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range providerFiles(copied) {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("# stub\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	gomega.RegisterTestingT(t) // LoadE2EConfig asserts with the global Expect
	up := clusterctl.LoadE2EConfig(context.Background(), clusterctl.LoadE2EConfigInput{ConfigPath: path})
	if up.ManagementClusterName != "capd-e2e" || len(up.Providers) != 4 {
		t.Errorf("LoadE2EConfig = %+v", up)
	}
	if got := up.MustGetVariable("KUBERNETES_VERSION_UPGRADE_TO"); got != "v1.37.2" {
		t.Errorf("KUBERNETES_VERSION_UPGRADE_TO = %q", got)
	}
	mine, err := E2EConfig(copied)
	if err != nil {
		t.Fatal(err)
	}
	if err := mine.Validate(); err != nil {
		t.Errorf("upstream Validate of E2EConfig() = %v", err)
	}
	if !reflect.DeepEqual(mine.Providers, up.Providers) {
		t.Errorf("E2EConfig providers differ from LoadE2EConfig's:\n%+v\n%+v", mine.Providers, up.Providers)
	}
}

func mustDuration(t *testing.T, v any) time.Duration {
	t.Helper()
	s, _ := v.(string)
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("interval %v: %v", v, err)
	}
	return d
}

// providerFiles lists every file the providers section points at, absolute.
func providerFiles(c *config.Config) []string {
	var out []string
	for _, p := range c.Providers {
		for _, f := range p.Files {
			out = append(out, c.ResolvePath(f.SourcePath))
		}
		for _, v := range p.Versions {
			out = append(out, c.ResolvePath(v.Value))
			for _, f := range v.Files {
				out = append(out, c.ResolvePath(f.SourcePath))
			}
		}
	}
	return out
}

func filesExist(c *config.Config) bool {
	for _, f := range providerFiles(c) {
		if _, err := os.Stat(f); err != nil {
			return false
		}
	}
	return true
}
