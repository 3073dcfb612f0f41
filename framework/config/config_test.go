package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

const repoConfig = "../../config/e2e.yaml"

func loadRepoConfig(t *testing.T) *Config {
	t.Helper()
	c, err := Load(repoConfig)
	if err != nil {
		t.Fatalf("Load(%s): %v", repoConfig, err)
	}
	return c
}

func TestLoadRepoConfig(t *testing.T) {
	c := loadRepoConfig(t)

	if got, want := c.Build.KubernetesVersions(), []string{"v1.36.3", "v1.37.2", "v1.35.4", "v1.34.4"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("KubernetesVersions() = %v, want %v", got, want)
	}
	checks := map[string][2]string{
		"kube-router":         {c.Build.KubeRouter.String(), "github.com/cloudnativelabs/kube-router/v2@v2.1.0"},
		"cluster API":         {c.Build.ClusterAPI.Version, "v1.14.2"},
		"haproxy":             {c.Build.LoadBalancer.Image, "kindest/haproxy:v20230606-42a2262b"},
		"cert-manager":        {c.Build.CertManager.Version, "v1.21.2"},
		"kustomize":           {c.Build.Kustomize.Version, "v5.7.0"},
		"etcd v1.36.3":        {c.Build.Kubernetes[0].Etcd.Image, "registry.k8s.io/etcd:3.6.8-0"},
		"etcd v1.37.2":        {c.Build.Kubernetes[1].Etcd.Image, "registry.k8s.io/etcd:3.7.0-0"},
		"coredns v1.37.2":     {c.Build.Kubernetes[1].CoreDNS.Image, "registry.k8s.io/coredns/coredns:v1.14.6"},
		"pause":               {c.Build.Kubernetes[1].Pause.Image, "registry.k8s.io/pause:3.10.2"},
		"node image":          {c.Build.Kubernetes[0].NodeImage, "kindest/node:v1.36.3"},
		"kubernetes version":  {c.Variables[VarKubernetesVersion], "v1.37.2"},
		"upgrade to":          {c.Variables[VarKubernetesVersionUpgradeTo], "v1.37.2"},
		"apiserver image":     {c.Build.Kubernetes[0].ComponentImage(KubeAPIServer), "registry.k8s.io/kube-apiserver:v1.36.3"},
		"management cluster":  {c.ManagementClusterName, "capd-e2e"},
		"cluster API version": {c.ClusterAPIVersion(), "v1.14.2"},
		"policy":              {c.Build.Registry.Policy, PolicyPullElseBuild},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	if c.BasePath() != "" {
		t.Errorf("BasePath() = %q, want none for the harness's own config", c.BasePath())
	}
	if !strings.HasSuffix(c.Path(), filepath.Join("config", "e2e.yaml")) || !filepath.IsAbs(c.Path()) {
		t.Errorf("Path() = %q, want an absolute path to config/e2e.yaml", c.Path())
	}
	// Every interval upstream's four specs use has a default.
	for _, key := range []string{"wait-controllers", "wait-cluster", "wait-control-plane", "wait-worker-nodes",
		"wait-machine-pool-nodes", "wait-delete-cluster", "wait-machine-upgrade", "wait-control-plane-upgrade",
		"wait-machine-deployment-upgrade", "wait-machine-pool-upgrade", "wait-nodes-ready", "wait-machine-remediation"} {
		if _, _, err := c.Intervals("quick-start", key); err != nil {
			t.Errorf("Intervals(quick-start, %s): %v", key, err)
		}
	}
}

// withProvider adds a valid provider to c and returns it, to break.
func withProvider(c *Config) *Provider {
	c.Providers = append(c.Providers, Provider{Name: "other", Type: InfrastructureProvider,
		Versions: []ProviderVersion{{Name: "v0.1.0", Value: "/components.yaml", Type: URLSource}}})
	return &c.Providers[len(c.Providers)-1]
}

// TestValidateNamesTheField breaks one field of the repo config at a time
// and checks the error names that field.
func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(c *Config)
		want   string
	}{
		{"untagged image", func(c *Config) { c.Build.LoadBalancer.Image = "kindest/haproxy" },
			"build.loadBalancer.image: Invalid value: \"kindest/haproxy\" is not an image reference with a tag"},
		{"conformance test image tag", func(c *Config) { c.Build.Kubernetes[1].Conformance.TestImages[0] = "agnhost" },
			`build.kubernetes[1].conformance.testImages[0]: Invalid value: "agnhost" is not <name>:<tag>`},
		{"kubetest configuration", func(c *Config) { c.Variables[VarKubetestConfiguration] = "/nope.yaml" },
			`variables.KUBETEST_CONFIGURATION: Invalid value: "/nope.yaml" is not a file`},
		{"kubetest dual-stack configuration", func(c *Config) { c.Variables[VarKubetestDualStackConfiguration] = "/nope-dualstack.yaml" },
			`variables.KUBETEST_DUALSTACK_CONFIGURATION: Invalid value: "/nope-dualstack.yaml" is not a file`},
		{"duplicate version", func(c *Config) { c.Build.Kubernetes[1].Version = "v1.36.3" },
			"build.kubernetes[1].version: Invalid value: v1.36.3 is also build.kubernetes[0]"},
		{"startup probes", func(c *Config) { c.Variables[VarStartupProbes] = "yes" },
			`variables.PROVIDER_STARTUP_PROBES: Invalid value: "yes" is not "true"`},
		{"management cluster", func(c *Config) { c.ManagementClusterName = "" },
			"managementClusterName: Required value"},
		{"load behavior", func(c *Config) { c.Images = []Image{{Name: "example.com/m:dev", LoadBehavior: "always"}} },
			`images[0].loadBehavior: Invalid value: "always" is not mustLoad or tryLoad`},
		{"interval duration", func(c *Config) { c.IntervalsByKey["default/wait-cluster"] = []string{"soon"} },
			"intervals[default/wait-cluster]: Invalid value: timeout: time: invalid duration"},
		{"interval count", func(c *Config) { c.IntervalsByKey["default/wait-cluster"] = []string{"5m", "1s", "1s"} },
			"intervals[default/wait-cluster]: Invalid value: want [timeout] or [timeout, poll], got 3 values"},
		{"interval key", func(c *Config) { c.IntervalsByKey["wait-cluster"] = []string{"5m"} },
			"intervals[wait-cluster]: Invalid value: key must be <spec>/<key>"},
		{"poll longer than timeout", func(c *Config) { c.IntervalsByKey["default/wait-cluster"] = []string{"5s", "10s"} },
			"intervals[default/wait-cluster]: Invalid value: poll 10s is longer than timeout 5s"},
		{"previous release not older", func(c *Config) { c.Build.ClusterAPI.Previous.Version = "v1.14.2" },
			`build.clusterAPI.previous.version: Invalid value: "v1.14.2" is not older than build.clusterAPI.version "v1.14.2"`},
		{"previous release too old", func(c *Config) { c.Build.ClusterAPI.Previous.Version = "v1.12.5" },
			`build.clusterAPI.previous.version: Invalid value: "v1.12.5" is older than v1.13.0`},
		{"previous release of another major", func(c *Config) { c.Build.ClusterAPI.Previous.Version = "v0.13.1" },
			`build.clusterAPI.previous.version: Invalid value: "v0.13.1" is older than v1.13.0`},
		{"previous clusterctl not a URL", func(c *Config) { c.Build.ClusterAPI.Previous.Clusterctl = "/usr/bin/clusterctl" },
			`build.clusterAPI.previous.clusterctl: Invalid value: "/usr/bin/clusterctl" is not an http(s) URL with a host`},
		{"release marker of a kustomization", func(c *Config) {
			v := &withProvider(c).Versions[0]
			v.Name, v.Type = "{go://example.com/p@v1.14}", KustomizeSource
		}, `providers[0].versions[0].name: Invalid value: release marker "{go://example.com/p@v1.14}" needs type url`},
		{"provider type", func(c *Config) { withProvider(c).Type = "Infra" },
			`providers[0].type: Invalid value: "Infra" is not a clusterctl provider type`},
		{"core provider name", func(c *Config) {
			p := withProvider(c)
			p.Type, p.Name = CoreProvider, "core"
		}, `providers: Invalid value: the CoreProvider must be named "cluster-api", not "core"`},
		{"provider URL without a host", func(c *Config) { withProvider(c).Versions[0].Value = "https:///core.yaml" },
			`providers[0].versions[0].value: Invalid value: "https:///core.yaml" is not an http(s) URL with a host`},
		{"bad replacement", func(c *Config) {
			withProvider(c).Versions[0].Replacements = []Replacement{{Old: "("}}
		}, "providers[0].versions[0].replacements[0].old: Invalid value: error parsing regexp"},
		{"policy", func(c *Config) { c.Build.Registry.Policy = "always" },
			`build.registry.policy: Invalid value: "always" is not build, pull or pull-else-build`},
		{"step policy", func(c *Config) { c.Build.Registry.Policies = map[string]string{"node/*": "never"} },
			`build.registry.policies[node/*]: Invalid value: "never" is not build, pull or pull-else-build`},
		{"mirror", func(c *Config) { c.Build.Registry.Mirror = "http://127.0.0.1:5001" },
			`build.registry.mirror: Invalid value: "http://127.0.0.1:5001" is not a registry`},
		{"variable names unbuilt version", func(c *Config) { c.Variables[VarKubernetesVersion] = "v1.35.0" },
			`variables.KUBERNETES_VERSION: Invalid value: "v1.35.0" has no build.kubernetes entry`},
		{"etcd upgrade tag", func(c *Config) { c.Variables[VarEtcdVersionUpgradeTo] = "3.6.8-0" },
			`variables.ETCD_VERSION_UPGRADE_TO: Invalid value: "3.6.8-0" is not the etcd tag "3.7.0-0" of v1.37.2`},
		{"coredns upgrade tag", func(c *Config) { c.Variables[VarCoreDNSVersionUpgradeTo] = "v1.14.2" },
			`variables.COREDNS_VERSION_UPGRADE_TO: Invalid value: "v1.14.2" is not the CoreDNS tag "v1.14.6" of v1.37.2`},
		{"kustomize", func(c *Config) { c.Build.Kustomize.Version = "" },
			"build.kustomize.version: Required value"},
		{"capd image", func(c *Config) { c.Build.ClusterAPI.Images.Docker = "" },
			"build.clusterAPI.images.docker: Required value"}, {"etcd image", func(c *Config) { c.Build.Kubernetes[1].Etcd.Image = "registry.k8s.io/etcd" },
			`build.kubernetes[1].etcd.image: Invalid value: "registry.k8s.io/etcd" is not an image reference with a tag`},
		{"conformance test images", func(c *Config) { c.Build.Kubernetes[1].Conformance.TestImages = nil },
			"build.kubernetes[1].conformance.testImages: Invalid value: at least one is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadRepoConfig(t)
			tt.break_(c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v\nwant it to contain %q", err, tt.want)
			}
			var fe *field.Error
			if !errors.As(err, &fe) {
				t.Errorf("Validate() error %T holds no *field.Error", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := loadRepoConfig(t)
	c.ManagementClusterName = ""
	c.Build.Kubernetes[1].Etcd.Image = ""
	c.Build.Kustomize.Version = ""
	err := c.Validate()
	for _, want := range []string{"managementClusterName: Required value", "build.kubernetes[1].etcd.image: Required value", "build.kustomize.version: Required value"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	repo, err := os.ReadFile(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, content, want string
	}{
		{"empty", "  \n", "the file is empty"},
		{"misspelt key", string(repo) + "\nbuildd: {}\n", `unknown field "buildd"`},
		{"misspelt nested key", strings.Replace(string(repo), "kubeRouter:", "kubeRouterr:", 1), `unknown field "kubeRouterr"`},
		{"not yaml", "build: [", "yaml"},
		{"misspelt key of an entry", strings.Replace(string(repo), "preload:", "preloadd:", 1), `unknown field "preloadd"`},
		{"invalid", strings.Replace(string(repo), "version: v5.7.0}", "version: \"\"}", 1), "build.kustomize.version: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load() = %v, want an error containing %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("Load() = %v, want it to name the file %s", err, p)
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
}

// minimal is the smallest config a run accepts; it has none of the image
// factory's keys.
const minimal = "testdata/minimal.yaml"

func TestDefaults(t *testing.T) {
	data, err := os.ReadFile(minimal)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := Parse(data, dir)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	k := c.Build.Kubernetes[0]
	checks := map[string][2]string{
		"node image":         {k.NodeImage, "kindest/node:v1.36.3"},
		"image repository":   {k.ImageRepository, DefaultImageRepository},
		"cert-manager":       {c.Build.CertManager.String(), DefaultCertManager + "@v1.21.2"},
		"kube-router module": {c.Build.KubeRouter.Path, DefaultKubeRouterModule},
		"kustomize module":   {c.Build.Kustomize.Path, DefaultKustomizeModule},
		"load behavior":      {string(c.Images[0].LoadBehavior), string(MustLoad)},
		"provider type":      {c.Providers[3].Versions[0].Type, KustomizeSource},
		"file target":        {c.Providers[3].Versions[0].Files[0].TargetName, "cluster-template.yaml"},
		"resolved path":      {c.ResolvePath("a/b"), filepath.Join(dir, "a", "b")},
		"provider value":     {c.Providers[3].Versions[0].Value, filepath.Join(dir, "d.yaml")},
		"absolute path":      {c.ResolvePath("/x/../y"), "/y"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
}

func TestIntervals(t *testing.T) {
	c := &Config{IntervalsByKey: map[string][]string{
		"default/wait-cluster":       {"5m", "10s"},
		"scale/wait-cluster":         {"10m", "15s"},
		"default/wait-delete":        {"3m"},
		"default/wait-bad":           {"soon"},
		"default/wait-control-plane": {"1h30m", "500ms"},
	}}
	tests := []struct {
		spec, key     string
		timeout, poll time.Duration
		err           string
	}{
		{spec: "quick-start", key: "wait-cluster", timeout: 5 * time.Minute, poll: 10 * time.Second},
		{spec: "scale", key: "wait-cluster", timeout: 10 * time.Minute, poll: 15 * time.Second},
		{spec: "scale", key: "wait-delete", timeout: 3 * time.Minute, poll: DefaultPollInterval},
		{spec: "x", key: "wait-control-plane", timeout: 90 * time.Minute, poll: 500 * time.Millisecond},
		{spec: "x", key: "wait-bad", err: `intervals[default/wait-bad]: timeout: time: invalid duration "soon"`},
		{spec: "x", key: "wait-nothing", err: `intervals: neither "x/wait-nothing" nor "default/wait-nothing" is set`},
	}
	for _, tt := range tests {
		timeout, poll, err := c.Intervals(tt.spec, tt.key)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Intervals(%s, %s) error = %v, want %q", tt.spec, tt.key, err, tt.err)
			}
			continue
		}
		if err != nil || timeout != tt.timeout || poll != tt.poll {
			t.Errorf("Intervals(%s, %s) = %v, %v, %v; want %v, %v", tt.spec, tt.key, timeout, poll, err, tt.timeout, tt.poll)
		}
	}
}

func TestVariables(t *testing.T) {
	c := &Config{path: "/cfg/e2e.yaml", Variables: map[string]string{"A": "from-file", "B": "from-file"}}
	t.Setenv("B", "from-env")
	t.Setenv("C", "")

	tests := []struct {
		name, want string
		ok         bool
	}{
		{"A", "from-file", true},
		{"B", "from-env", true},
		{"C", "", true}, // set but empty still overrides, as upstream
		{"CAPD_E2E_SURELY_UNSET", "", false},
	}
	for _, tt := range tests {
		got, ok := c.LookupVariable(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("LookupVariable(%s) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if v, err := c.Variable("B"); err != nil || v != "from-env" {
		t.Errorf("Variable(B) = %q, %v", v, err)
	}
	_, err := c.Variable("CAPD_E2E_SURELY_UNSET")
	if err == nil || !strings.Contains(err.Error(), "variables.CAPD_E2E_SURELY_UNSET") {
		t.Errorf("Variable(unset) = %v, want an error naming the variable", err)
	}
}

func TestKubernetesVersion(t *testing.T) {
	c := loadRepoConfig(t)
	for _, v := range []string{"v1.37.2", "1.37.2"} {
		k, err := c.Build.KubernetesVersion(v)
		if err != nil || k.Version != "v1.37.2" || k.Etcd.Image != "registry.k8s.io/etcd:3.7.0-0" {
			t.Errorf("KubernetesVersion(%s) = %+v, %v", v, k, err)
		}
	}
	// The entry is the config's own, not a copy.
	k, _ := c.Build.KubernetesVersion("v1.36.3")
	if k != &c.Build.Kubernetes[0] {
		t.Error("KubernetesVersion returned a copy")
	}
	_, err := c.Build.KubernetesVersion("v1.35.0")
	if err == nil || !strings.Contains(err.Error(), `no entry for version "v1.35.0" (have v1.36.3, v1.37.2, v1.35.4, v1.34.4)`) {
		t.Errorf("KubernetesVersion(v1.35.0) = %v", err)
	}
}

func TestImageTags(t *testing.T) {
	for _, tc := range []struct{ ref, tag, withDev string }{
		{"registry.k8s.io/pause:3.10.2", "3.10.2", "registry.k8s.io/pause:dev"},
		{"kindest/node:v1.36.3", "v1.36.3", "kindest/node:dev"},
		{"127.0.0.1:5001/capd-e2e/x:v1", "v1", "127.0.0.1:5001/capd-e2e/x:dev"},
		{"127.0.0.1:5001/capd-e2e/x", "", "127.0.0.1:5001/capd-e2e/x:dev"},
		{"kindest/haproxy", "", "kindest/haproxy:dev"},
	} {
		if got := ImageTag(tc.ref); got != tc.tag {
			t.Errorf("ImageTag(%q) = %q, want %q", tc.ref, got, tc.tag)
		}
		if got := WithTag(tc.ref, "dev"); got != tc.withDev {
			t.Errorf("WithTag(%q, dev) = %q, want %q", tc.ref, got, tc.withDev)
		}
	}
	var e Errors
	for _, v := range []string{"v1.2.3", "v1.2.3-rc.1", "v1.2.3+build.5", "v0.0.0-20260210185600-b8788abfbbc2"} {
		e.Version("ok", v)
	}
	if len(e) != 0 {
		t.Errorf("valid versions rejected: %v", e.Err())
	}
	for _, v := range []string{"1.2.3", "v1.2", "v1", "v1.2.3.4", "v01.2.3"} {
		e = nil
		if e.Version("bad", v); len(e) != 1 {
			t.Errorf("version %q accepted", v)
		}
	}
}

func TestPreviousProviders(t *testing.T) {
	c, err := Load("../../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.PreviousProviders() {
		got = append(got, strings.Join([]string{p.StepID, p.Package, p.Kustomization, p.Image}, " "))
	}
	want := []string{
		"cluster-api/v1.13.4/core sigs.k8s.io/cluster-api config/default registry.k8s.io/cluster-api/cluster-api-controller:v1.13.4",
		"cluster-api/v1.13.4/kubeadm-bootstrap sigs.k8s.io/cluster-api/bootstrap/kubeadm bootstrap/kubeadm/config/default registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.13.4",
		"cluster-api/v1.13.4/kubeadm-control-plane sigs.k8s.io/cluster-api/controlplane/kubeadm controlplane/kubeadm/config/default registry.k8s.io/cluster-api/kubeadm-control-plane-controller:v1.13.4",
		"cluster-api/v1.13.4/docker sigs.k8s.io/cluster-api/test/infrastructure/docker infrastructure/docker/config/default registry.k8s.io/cluster-api/capd-manager:v1.13.4",
	}
	if !slices.Equal(got, want) {
		t.Errorf("PreviousProviders() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// From v1.14 on, the core manager is under core/.
	c.Build.ClusterAPI.Version = "v1.15.0"
	c.Build.ClusterAPI.Previous.Version = "v1.14.2"
	if p := c.PreviousProviders()[0]; p.Package != ClusterAPIModule+"/core" || p.Kustomization != "core/config/default" {
		t.Errorf("v1.14.2's core = %s from %s, want %s/core from core/config/default", p.Package, p.Kustomization, ClusterAPIModule)
	}
	c.Build.ClusterAPI.Previous = nil
	if p := c.PreviousProviders(); p != nil {
		t.Errorf("PreviousProviders() without previous = %v, want nil", p)
	}
}
