package specs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
)

// waitCall matches a wait in the specs' code: r.wait(c, "<key>", ...),
// r.durations("<key>"), r.intervals("<key>"). A line marked "replaces a
// wait" waits instead of a wait counted elsewhere (an interval handed to a
// hook that replaces one of the spec's own waits, or the other of two ways
// of doing one step), and is not a wait of its own.
var waitCall = regexp.MustCompile(`(?:intervals\(|durations\(|wait\(\w+, )"([a-z-]+)"`)

var variableCall = regexp.MustCompile(`variable\((var[A-Za-z]+)\)`)

// scan returns the interval keys of every wait in files, one per call site,
// and the variables they read.
func scan(t *testing.T, files ...string) (waits, vars []string) {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasSuffix(strings.TrimSpace(line), "// replaces a wait") {
				continue
			}
			for _, m := range waitCall.FindAllStringSubmatch(line, -1) {
				waits = append(waits, m[1])
			}
			for _, m := range variableCall.FindAllStringSubmatch(line, -1) {
				vars = append(vars, m[1])
			}
		}
	}
	return waits, vars
}

// upstreamWait matches a wait in upstream's specs and helpers: an
// interval looked up by spec name, GetIntervals(specName, "<key>") or
// intervalsGetter(specName, "<key>").
var upstreamWait = regexp.MustCompile(`(?:GetIntervals|intervalsGetter)\(specName, "([a-z-]+)"\)`)

// scanUpstream returns the interval keys of every wait in an upstream file.
func scanUpstream(t *testing.T, file string) (waits, vars []string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range upstreamWait.FindAllStringSubmatch(string(data), -1) {
		waits = append(waits, m[1])
	}
	if len(waits) == 0 {
		t.Fatalf("%s: no wait found: is it still an upstream spec?", file)
	}
	return waits, nil
}

// upstreamFile is rel in the sigs.k8s.io/cluster-api/test module this
// module builds with.
func upstreamFile(t *testing.T, rel string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api/test").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/cluster-api/test: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(rel))
}

func count(keys []string) map[string]int {
	m := map[string]int{}
	for _, k := range keys {
		m[k]++
	}
	return m
}

// TestWaitsListWhatTheCodeWaitsFor checks that each spec's declared waits
// and cleanup waits (specFacts), which the default timeouts and the
// Requirements are made of, list every wait of the spec's code (its
// declared files), and that each default covers the sum of those
// waits at config/e2e.yaml's intervals: a wait added to a spec and not to
// its list fails here.
func TestWaitsListWhatTheCodeWaitsFor(t *testing.T) {
	cfg, err := config.Load("../../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e2e, err := upstream.E2EConfig(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	varNames := map[string]string{
		"varKubernetesVersion": varKubernetesVersion, "varKubernetesVersionUpgradeFrom": varKubernetesVersionUpgradeFrom,
		"varKubernetesVersionUpgradeTo": varKubernetesVersionUpgradeTo, "varKubetestConfiguration": varKubetestConfiguration,
		"varKubetestDualStackConfiguration":      varKubetestDualStackConfiguration,
		"varKubernetesVersionChainedUpgradeFrom": varKubernetesVersionChainedUpgradeFrom,
		"varKubernetesVersionChainedUpgradeVia":  varKubernetesVersionChainedUpgradeVia,
	}
	creation, _ := scan(t, "create.go", "waits.go")
	for _, f := range declaredSpecs() {
		spec, files := f.name, f.files
		own, vars := scan(t, files...)
		code := slices.Concat(creation, own)
		cleanupFiles := append([]string{"cleanup.go"}, f.cleanupFiles...)
		if f.upstream != "" {
			// Upstream's spec: its waits are in its file, its cleanup's
			// in upstream's DumpSpecResourcesAndCleanup.
			files = []string{upstreamFile(t, f.upstream)}
			code, _ = scanUpstream(t, files[0])
			cleanupFiles = []string{upstreamFile(t, "framework/spec_helpers.go")}
		}
		listed := count(f.waits)
		for k, n := range count(code) {
			if listed[k] < n {
				t.Errorf("%s waits %d times with %q in its code (%s, create.go, waits.go), its declaration lists it %d times", spec, n, k, strings.Join(files, ", "), listed[k])
			}
		}
		sum, err := sumWaits(e2e, spec, code)
		if err != nil {
			t.Fatal(err)
		}
		def, err := defaultTimeout(e2e, spec)
		if err != nil {
			t.Fatal(err)
		}
		if def < sum {
			t.Errorf("%s: default timeout %s < %s, the sum of the waits in its code", spec, def, sum)
		}
		t.Logf("%s: default timeout %s (the waits in its code: %s)", spec, def, sum)

		cleanupCode, _ := scan(t, cleanupFiles...)
		if f.upstream != "" {
			cleanupCode, _ = scanUpstream(t, cleanupFiles[0])
		}
		cleanupSum, err := sumWaits(e2e, spec, cleanupCode)
		if err != nil {
			t.Fatal(err)
		}
		cdef, err := defaultCleanupTimeout(e2e, spec)
		if err != nil {
			t.Fatal(err)
		}
		if cdef < cleanupSum+2*5*time.Minute {
			t.Errorf("%s: default cleanup timeout %s does not cover its waits (%s) and two log collections", spec, cdef, cleanupSum)
		}

		var req *struct{ vars, intervals []string }
		for _, r := range Requirements() {
			if r.Spec == spec {
				req = &struct{ vars, intervals []string }{r.Variables, r.Intervals}
			}
		}
		if req == nil {
			t.Fatalf("no Requirement for spec %s", spec)
		}
		for _, k := range slices.Concat(code, cleanupCode) {
			if !slices.Contains(req.intervals, k) {
				t.Errorf("%s waits with interval %q, which its Requirement does not list", spec, k)
			}
		}
		for _, v := range vars {
			if !slices.Contains(req.vars, varNames[v]) {
				t.Errorf("%s reads variable %s, which its Requirement does not list", spec, v)
			}
		}
	}
	if got := Requirements(LabelQuickStart); len(got) != 1 || got[0].Spec != "quick-start" {
		t.Errorf("Requirements(quick-start) = %+v", got)
	}
	if got := Requirements(LabelRemediation); len(got) != 2 {
		t.Errorf("Requirements(remediation) = %+v", got)
	}
	// Only the spec whose workers mount a kubeadm asks setup for one.
	for _, r := range Requirements() {
		want := []string(nil)
		if r.Spec == specKubeadmJoinOldNodes {
			want = []string{varKubernetesVersionUpgradeTo}
		}
		if !slices.Equal(r.KubeadmBinaries, want) {
			t.Errorf("Requirements: %s: KubeadmBinaries = %v, want %v", r.Spec, r.KubeadmBinaries, want)
		}
	}
	// Only the IPv6-only spec asks setup for a dual-stack management
	// cluster: the others keep kind's IPv4 one.
	for _, r := range Requirements() {
		if r.DualStackManagement != (r.Spec == specIPv6) {
			t.Errorf("Requirements: %s: DualStackManagement = %t", r.Spec, r.DualStackManagement)
		}
	}
	if got := Requirements(LabelIPv6Only); len(got) != 1 || !got[0].DualStackManagement {
		t.Errorf("Requirements(ipv6-only) = %+v", got)
	}
	// The IPv6-only spec's labels select nothing of the dual-stack one
	// (its e2e tests' images).
	if got := Requirements(LabelQuickStart, LabelIPv6, LabelIPv6Only); len(got) != 2 || got[0].Spec != specIPv6 || got[1].Spec != specQuickStart {
		t.Errorf("Requirements(quick-start, IPv6, ipv6-only) = %+v", got)
	}
}

// TestDefaultTimeoutFailsOnAMissingInterval: a config without one of the
// spec's intervals has no default timeout, and says which.
func TestDefaultTimeoutFailsOnAMissingInterval(t *testing.T) {
	cfg, err := config.Load("../../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	delete(cfg.IntervalsByKey, "default/wait-load-balancer")
	e2e, err := upstream.E2EConfig(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := defaultTimeout(e2e, "quick-start"); err == nil || !strings.Contains(err.Error(), "default/wait-load-balancer") {
		t.Errorf("defaultTimeout without wait-load-balancer: %v", err)
	}
	if _, err := defaultTimeout(e2e, "no-such-spec"); err == nil {
		t.Error("a spec without a list of waits has a default timeout")
	}
}
