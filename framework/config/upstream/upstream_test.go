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
	// Ours, plus each version's pause image and what the conformance
	// specs need of its conformance section.
	want := maps.Clone(ours.Variables)
	for _, k := range ours.Build.Kubernetes {
		want[config.PauseImageVariable(k.Version)] = k.Pause.Image
		if k.Conformance != nil {
			want[config.ConformanceImageVariable(k.Version)] = k.ConformanceImage()
			want[config.ConformanceTestImagesVariable(k.Version)] = strings.Join(k.TestImageRefs(), " ")
		}
	}
	if !maps.Equal(up.Variables, want) {
		t.Errorf("Variables differ:\nupstream %v\nwant     %v", up.Variables, want)
	}
	if got := up.Variables["CONFORMANCE_IMAGE_1_37_2"]; got != "registry.k8s.io/conformance:v1.37.2" {
		t.Errorf("CONFORMANCE_IMAGE_1_37_2 = %q", got)
	}
	if got := up.Variables["PAUSE_IMAGE_1_36_3"]; got != "registry.k8s.io/pause:3.10.2" {
		t.Errorf("PAUSE_IMAGE_1_36_3 = %q", got)
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
	if len(up.Providers) != 5 {
		t.Fatalf("%d providers, want the 5 built-in ones", len(up.Providers))
	}
	for _, p := range up.Providers {
		// The four built-in providers at the version under test and at
		// the release clusterctl upgrade starts from; the test extension
		// at the first only.
		want := 2
		if p.Type == config.RuntimeExtensionProvider {
			want = 1
		}
		if len(p.Versions) != want {
			t.Errorf("provider %s %s has %d versions, want %d", p.Type, p.Name, len(p.Versions), want)
		}
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
	type rendered struct {
		b       config.BuiltinProvider
		version string
	}
	var all []rendered
	for _, b := range ours.ActiveBuiltinProviders() {
		all = append(all, rendered{b, ours.ClusterAPIVersion()})
	}
	// And the release clusterctl upgrade starts from, beside them.
	for _, b := range ours.PreviousProviders() {
		all = append(all, rendered{b, ours.Build.ClusterAPI.Previous.Version})
	}
	for _, r := range all {
		comp, md := config.RenderedComponentsAt(render, r.b, r.version)
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

// TestIntervalsOneReader checks that an interval reads the same through the
// typed config, through the E2EConfig derived from it, and through an
// E2EConfig a provider loaded with upstream's own loader, which keeps a
// one-value interval as written; and that a bad interval fails all three
// alike.
func TestIntervalsOneReader(t *testing.T) {
	ours, err := config.Load(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	ours.IntervalsByKey["default/wait-short"] = []string{"4m"}
	ours.IntervalsByKey["quick-start/wait-short"] = []string{"2m", "5s"}
	derived, err := E2EConfig(ours, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// As upstream's LoadE2EConfig leaves them: the file's values verbatim.
	loaded := &clusterctl.E2EConfig{Intervals: maps.Clone(ours.IntervalsByKey)}
	for _, tc := range []struct {
		spec, key     string
		timeout, poll time.Duration
	}{
		{"quick-start", "wait-short", 2 * time.Minute, 5 * time.Second},
		{"self-hosted", "wait-short", 4 * time.Minute, config.DefaultPollInterval},
		{"quick-start", "wait-cluster", 5 * time.Minute, 10 * time.Second},
	} {
		for name, read := range map[string]func() (time.Duration, time.Duration, error){
			"typed":   func() (time.Duration, time.Duration, error) { return ours.Intervals(tc.spec, tc.key) },
			"derived": func() (time.Duration, time.Duration, error) { return Intervals(derived, tc.spec, tc.key) },
			"loaded":  func() (time.Duration, time.Duration, error) { return Intervals(loaded, tc.spec, tc.key) },
		} {
			timeout, poll, err := read()
			if err != nil || timeout != tc.timeout || poll != tc.poll {
				t.Errorf("%s %s/%s = %s, %s, %v; want %s, %s", name, tc.spec, tc.key, timeout, poll, err, tc.timeout, tc.poll)
			}
		}
	}
	loaded.Intervals["default/wait-bad"] = []string{"10s", "1m"}
	if _, _, err := Intervals(loaded, "quick-start", "wait-bad"); err == nil || !strings.Contains(err.Error(), "longer than timeout") {
		t.Errorf("a poll longer than its timeout: %v", err)
	}
	if _, _, err := Intervals(loaded, "quick-start", "wait-missing"); err == nil || !strings.Contains(err.Error(), `"default/wait-missing"`) {
		t.Errorf("a missing interval: %v", err)
	}
}
