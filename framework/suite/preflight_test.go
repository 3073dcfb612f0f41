package suite

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// harnessWith makes a harness root whose config/e2e.yaml is the real one
// with edit applied, and points CAPD_E2E_ROOT at it.
func harnessWith(t *testing.T, edit func(string) string) string {
	t.Helper()
	real, err := config.HarnessRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(real, "config", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	edited := edit(string(data))
	if edited == string(data) {
		t.Fatal("the edit changed nothing")
	}
	if err := os.WriteFile(filepath.Join(root, "config", "e2e.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "data"), filepath.Join(root, "data")); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvHarnessRoot, root)
	return filepath.Join(root, "config", "e2e.yaml")
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

// TestBadInputStopsBeforeAnythingIsCreated feeds Setup bad configs and
// environments: each must fail naming the field, in one line per problem,
// before the engine is touched. Setup is given no Runtime: it would connect
// to the engine only after the config checks, so a failed setup that holds
// a Runtime touched the engine.
func TestBadInputStopsBeforeAnythingIsCreated(t *testing.T) {
	// Shaped like e2e/specs' own (the suite must not import the specs).
	create := []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes", "wait-delete-cluster"}
	quickStart := []Requirement{{Spec: "quick-start", Label: "quick-start",
		Variables: []string{"KUBERNETES_VERSION"}, KubernetesVersions: []string{"KUBERNETES_VERSION"}, Intervals: create}}
	upgrade := []Requirement{{Spec: "k8s-upgrade", Label: "upgrade",
		Variables:          []string{"KUBERNETES_VERSION_UPGRADE_FROM", "KUBERNETES_VERSION_UPGRADE_TO"},
		KubernetesVersions: []string{"KUBERNETES_VERSION_UPGRADE_FROM", "KUBERNETES_VERSION_UPGRADE_TO"}, Intervals: create}}
	remediation := []Requirement{{Spec: "md-remediation", Label: "remediation",
		Variables: []string{"KUBERNETES_VERSION"}, KubernetesVersions: []string{"KUBERNETES_VERSION"},
		Intervals: append(slices.Clone(create), "wait-machine-remediation")}}
	every := slices.Concat(quickStart, upgrade, remediation)
	clusterctlUpgrade := []Requirement{{Spec: "clusterctl-upgrade", Label: "clusterctl-upgrade",
		Variables: []string{"KUBERNETES_VERSION"}, KubernetesVersions: []string{"KUBERNETES_VERSION"}, Intervals: create, PreviousRelease: true}}
	tests := []struct {
		name    string
		env     map[string]string
		harness func(string) string // edits the harness config
		overlay string              // a provider's config instead of the harness's
		specs   []Requirement
		want    []string
	}{
		{name: "KUBERNETES_VERSION empty in the environment", env: map[string]string{"KUBERNETES_VERSION": ""}, specs: quickStart,
			want: []string{"variables.KUBERNETES_VERSION: required by spec quick-start, set neither in"}},
		{name: "KUBERNETES_VERSION without a node image", env: map[string]string{"KUBERNETES_VERSION": "v1.35.0"}, specs: quickStart,
			want: []string{`variables.KUBERNETES_VERSION (environment): Invalid value: "v1.35.0" has no build.kubernetes entry (have v1.36.3, v1.37.2, v1.35.4, v1.34.4): no node image would exist for it, and CAPD would try to pull one`}},
		{name: "KUBERNETES_VERSION_MANAGEMENT missing", harness: replace(`  KUBERNETES_VERSION_MANAGEMENT: "v1.37.2"`+"\n", ""), specs: quickStart,
			want: []string{"variables.KUBERNETES_VERSION_MANAGEMENT: required by the management cluster"}},
		{name: "one-value interval is fine, a bad one is not", harness: replace(`default/wait-cluster: ["5m", "10s"]`, `default/wait-cluster: ["soon"]`), specs: quickStart,
			want: []string{`intervals[default/wait-cluster]: Invalid value: timeout: time: invalid duration "soon"`}},
		{name: "interval missing", harness: replace(`  default/wait-delete-cluster: ["3m", "10s"]`+"\n", ""), specs: quickStart,
			want: []string{`intervals: neither "quick-start/wait-delete-cluster" nor "default/wait-delete-cluster" is set (needed by spec quick-start)`}},
		{name: "poll longer than timeout", harness: replace(`default/wait-cluster: ["5m", "10s"]`, `default/wait-cluster: ["5s", "10s"]`), specs: quickStart,
			want: []string{"intervals[default/wait-cluster]: Invalid value: poll 10s is longer than timeout 5s"}},
		{name: "upgrade variables missing", env: map[string]string{"KUBERNETES_VERSION_UPGRADE_TO": ""}, specs: upgrade,
			want: []string{"variables.KUBERNETES_VERSION_UPGRADE_TO: required by spec k8s-upgrade"}},
		{name: "etcd tag of the upgrade", env: map[string]string{"ETCD_VERSION_UPGRADE_TO": "3.6.8-0"}, specs: upgrade,
			want: []string{`variables.ETCD_VERSION_UPGRADE_TO (environment): Invalid value: "3.6.8-0" is not the etcd tag "3.7.0-0" of v1.37.2`}},
		{name: "misspelt key in a provider's config", overlay: "managementClusterName: p\nintervalz: {}\n",
			want: []string{`unknown field "intervalz"`}},
		{name: "untagged image", overlay: "images:\n- name: example.com/my-provider/manager\n",
			want: []string{`images[0].name: Invalid value: "example.com/my-provider/manager" is not an image reference with a tag`}},
		{name: "load behavior", overlay: "images:\n- {name: example.com/m:dev, loadBehavior: always}\n",
			want: []string{`images[0].loadBehavior: Invalid value: "always" is not mustLoad or tryLoad`}},
		{name: "provider from the network", overlay: "providers:\n- {name: p, type: InfrastructureProvider, versions: [{name: v0.1.0, value: \"https://example.invalid/c.yaml\", type: url}]}\n",
			want: []string{`providers[0].versions[0].value: "https://example.invalid/c.yaml": Get "https://example.invalid/c.yaml": `}},
		{name: "no release to upgrade from", harness: replace("    previous:\n      version: v1.13.4\n", ""), specs: clusterctlUpgrade,
			want: []string{"build.clusterAPI.previous: required by spec clusterctl-upgrade (the release clusterctl upgrade starts from), unset in"}},
		{name: "previous clusterctl unreachable", specs: clusterctlUpgrade,
			harness: replace("      version: v1.13.4\n", "      version: v1.13.4\n      clusterctl: https://example.invalid/clusterctl-{OS}-{ARCH}\n"),
			want:    []string{`build.clusterAPI.previous.clusterctl: "https://example.invalid/clusterctl-` + runtime.GOOS + "-" + runtime.GOARCH + `": Get "https://example.invalid/`}},
		{name: "misspelt build key", overlay: "build:\n  loadBalancer: {imagee: example.com/lb:v1}\n",
			want: []string{`build: error unmarshaling JSON: while decoding JSON: json: unknown field "imagee"`}},
		{name: "CAPI_SOURCE_DIR not a tree", env: map[string]string{config.EnvClusterAPISource: "/"},
			want: []string{`build.clusterAPI.source (CAPI_SOURCE_DIR): Invalid value: "/" is not a cluster-api working tree`}},
		{name: "IMAGE_POLICY", env: map[string]string{config.EnvImagePolicy: "always"},
			want: []string{`build.registry.policy (IMAGE_POLICY): Invalid value: "always" is not build, pull or pull-else-build`}},
		{name: "IMAGE_MIRROR", env: map[string]string{config.EnvImageMirror: "http://127.0.0.1:5001"},
			want: []string{`build.registry.mirror (IMAGE_MIRROR): Invalid value: "http://127.0.0.1:5001" is not a registry`}},
		{name: "empty config", overlay: " \n", want: []string{"the file is empty"}},
		{name: "IPv6-only management cluster", env: map[string]string{"IP_FAMILY": "IPv6"}, specs: quickStart,
			want: []string{`variables.IP_FAMILY: "IPv6": the management cluster the suite creates is IPv4 or dual (dual-stack), not IPv6`}},
		{name: "every problem of the config at once", env: map[string]string{config.EnvImagePolicy: "always", "KUBERNETES_VERSION_UPGRADE_FROM": "v1.30.0"},
			harness: replace(`default/wait-nodes-ready: ["10m", "10s"]`, `default/wait-nodes-ready: ["10m", "1h"]`),
			want: []string{`build.registry.policy (IMAGE_POLICY): Invalid value: "always"`, `variables.KUBERNETES_VERSION_UPGRADE_FROM (environment): Invalid value: "v1.30.0" has no build.kubernetes entry`,
				"intervals[default/wait-nodes-ready]: Invalid value: poll 1h0m0s is longer than timeout 10m0s"}},
		{name: "every problem of the specs at once", env: map[string]string{"KUBERNETES_VERSION": "", "KUBERNETES_VERSION_UPGRADE_TO": ""},
			harness: replace(`  default/wait-machine-remediation: ["5m", "10s"]`+"\n", ""), specs: every,
			want: []string{"variables.KUBERNETES_VERSION: required by spec quick-start", "variables.KUBERNETES_VERSION_UPGRADE_TO: required by spec k8s-upgrade",
				`intervals: neither "md-remediation/wait-machine-remediation" nor "default/wait-machine-remediation" is set (needed by spec md-remediation)`}},
	}
	if len(tests) < 12 {
		t.Fatalf("%d cases; the table must keep at least 12", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			configPath := filepath.Join("..", "..", "config", "e2e.yaml")
			if tt.harness != nil {
				configPath = harnessWith(t, tt.harness)
			}
			if tt.overlay != "" {
				configPath = filepath.Join(t.TempDir(), "my-e2e.yaml")
				if err := os.WriteFile(configPath, []byte(tt.overlay), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			artifacts := t.TempDir()
			env, err := Setup(context.Background(), SetupInput{ConfigPath: configPath, ArtifactFolder: artifacts, Requirements: tt.specs}, t.Logf)
			if err == nil {
				t.Fatal("Setup succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Setup error lacks %q:\n%v", w, err)
				}
			}
			if env.Runtime != nil {
				t.Errorf("setup connected to the engine before the input was checked")
			}
			if err := env.Teardown(context.Background()); err != nil {
				t.Errorf("Teardown after a failed setup: %v", err)
			}
		})
	}
}

// TestManagementDualStack: the management cluster is dual-stack when
// IP_FAMILY says dual (any case), or when a selected spec needs it; IPv4
// or unset with no such spec keeps it IPv4.
func TestManagementDualStack(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "..", "config", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ipv6 := []Requirement{{Spec: "quick-start"}, {Spec: "ipv6", DualStackManagement: true}}
	for _, tc := range []struct {
		family string
		reqs   []Requirement
		want   bool
	}{
		{"IPv4", nil, false}, {"", nil, false}, {"IPv4", ipv6, true}, {"dual", nil, true}, {"Dual", ipv6[:1], true},
	} {
		t.Setenv("IP_FAMILY", tc.family)
		got, err := managementDualStack(cfg, tc.reqs)
		if err != nil || got != tc.want {
			t.Errorf("IP_FAMILY %q, specs %v: %t, %v; want %t", tc.family, tc.reqs, got, err, tc.want)
		}
	}
}
