package upstream

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

const repoConfig = "../../../config/e2e.yaml"

func TestE2EConfigMatchesOurs(t *testing.T) {
	ours, err := config.Load(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	render := t.TempDir()
	up, err := E2EConfig(ours, render)
	if err != nil {
		t.Fatalf("E2EConfig: %v", err)
	}
	if up.ManagementClusterName != ours.ManagementClusterName {
		t.Errorf("ManagementClusterName = %q, want %q", up.ManagementClusterName, ours.ManagementClusterName)
	}
	if !maps.Equal(up.Variables, ours.Variables) {
		t.Errorf("Variables differ:\nupstream %v\nours     %v", up.Variables, ours.Variables)
	}
	if len(up.Intervals) != len(ours.IntervalsByKey) {
		t.Errorf("Intervals differ:\nupstream %v\nours     %v", up.Intervals, ours.IntervalsByKey)
	}
	// A one-value interval gets the default poll: upstream's helpers index
	// both values.
	ours.IntervalsByKey["default/wait-short"] = []string{"4m"}
	up2, err := E2EConfig(ours, render)
	if err != nil {
		t.Fatal(err)
	}
	if got := up2.GetIntervals("quick-start", "wait-short"); !reflect.DeepEqual(got, []any{"4m0s", "10s"}) {
		t.Errorf(`GetIntervals of ["4m"] = %v, want [4m0s 10s]`, got)
	}
	delete(ours.IntervalsByKey, "default/wait-short")
	images := ours.ManagementImages()
	if len(up.Images) != len(images) {
		t.Fatalf("%d images, want %d", len(up.Images), len(images))
	}
	for i, img := range up.Images {
		if img.Name != images[i].Name || string(img.LoadBehavior) != string(images[i].LoadBehavior) {
			t.Errorf("Images[%d] = %+v, want %+v", i, img, images[i])
		}
	}
	if len(up.Providers) != 4 {
		t.Fatalf("%d providers, want the 4 built-in ones", len(up.Providers))
	}
	for _, p := range up.Providers {
		for _, v := range p.Versions {
			if v.Type != clusterctl.URLSource || !strings.HasPrefix(v.Value, render+string(filepath.Separator)) {
				t.Errorf("provider %s %s: %s %q, want a url under %s", p.Name, v.Name, v.Type, v.Value, render)
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

	// Upstream's Validate refuses the config until the components are
	// rendered (the reason E2EConfig leaves it to the caller), and accepts
	// it after.
	if err := up.Validate(); err == nil {
		t.Error("upstream Validate() = nil although the components are not rendered")
	}
	for _, b := range ours.ActiveBuiltinProviders() {
		comp, md := ours.RenderedComponents(render, b)
		for _, f := range []string{comp, md} {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("# stub\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := up.Validate(); err != nil {
		t.Errorf("upstream Validate() after rendering = %v", err)
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
