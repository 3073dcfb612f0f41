package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// overlay is a provider's config, as examples/ has one.
const overlay = `
managementClusterName: my-provider-e2e
images:
- name: example.com/my-provider/manager:dev
providers:
- name: docker
  type: InfrastructureProvider
  versions:
  - name: v1.14.99
    value: ../../config/default
    contract: v1beta2
    files:
    - sourcePath: metadata.yaml
    - sourcePath: templates/cluster-template.yaml
variables:
  KUBERNETES_VERSION: v1.37.2
  MY_VARIABLE: mine
intervals:
  my-spec/wait-thing: ["1m", "1s"]
build:
  goImages:
  - image: example.com/my-provider/manager:dev
    dir: ../..
    package: ./cmd/manager
  registry:
    policies: {"node/*": build}
`

func writeOverlay(t *testing.T, content string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo", "test", "e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadMergesAProvidersConfigOverTheHarness(t *testing.T) {
	p := writeOverlay(t, overlay)
	repo := filepath.Dir(filepath.Dir(filepath.Dir(p)))
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	harness := loadRepoConfig(t)
	if c.BasePath() != harness.Path() || c.Path() != p {
		t.Errorf("BasePath() = %q, Path() = %q", c.BasePath(), c.Path())
	}
	checks := map[string][2]string{
		"name":                {c.ManagementClusterName, "my-provider-e2e"},
		"overridden variable": {c.Variables[VarKubernetesVersion], "v1.37.2"},
		"harness variable":    {c.Variables[VarKubernetesVersionUpgradeTo], "v1.37.2"},
		"own variable":        {c.Variables["MY_VARIABLE"], "mine"},
		"harness build":       {c.Build.Kubernetes[0].NodeImage, "kindest/node:v1.36.3"},
		"kustomize path":      {c.Providers[0].Versions[0].Value, filepath.Join(repo, "config", "default")},
		"file path":           {c.Providers[0].Versions[0].Files[0].SourcePath, filepath.Join(filepath.Dir(p), "metadata.yaml")},
		"harness policy":      {c.Build.Registry.Policy, PolicyPullElseBuild},
		"node policy":         {c.Build.Registry.PolicyFor("node/v1.36.3", true), PolicyBuild},
		"harness interval":    {strings.Join(c.IntervalsByKey["default/wait-cluster"], ","), "5m,10s"},
		"own interval":        {strings.Join(c.IntervalsByKey["my-spec/wait-thing"], ","), "1m,1s"},
	}
	for name, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", name, v[0], v[1])
		}
	}

	// The provider replaces the built-in CAPD: only Cluster API's three
	// and its test extension are built in, and only the provider's manager
	// is loaded besides.
	var builtins []string
	for _, b := range c.ActiveBuiltinProviders() {
		builtins = append(builtins, b.Type+"/"+b.Name)
	}
	if want := []string{"CoreProvider/cluster-api", "BootstrapProvider/kubeadm", "ControlPlaneProvider/kubeadm", "RuntimeExtensionProvider/test-extension"}; !slices.Equal(builtins, want) {
		t.Errorf("ActiveBuiltinProviders() = %v, want %v", builtins, want)
	}
	var images []string
	for _, img := range c.ManagementImages() {
		images = append(images, img.Name)
	}
	want := []string{
		"registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2",
		"registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.14.2",
		"registry.k8s.io/cluster-api/kubeadm-control-plane-controller:v1.14.2",
		"registry.k8s.io/cluster-api/test-extension:v1.14.2",
		"capd-e2e/cert-manager-substitute:v1.21.2",
		// The harness's DOCKER_CLOUD_PROVIDER is "external".
		"capd-e2e/cloud-controller-manager:v0.36.3",
		"example.com/my-provider/manager:dev",
	}
	if !slices.Equal(images, want) {
		t.Errorf("ManagementImages() = %v, want %v", images, want)
	}

	// The repository: four rendered built-ins, then the provider, which
	// keeps the harness's templates but the one it brings.
	ps, err := c.RepositoryProviders("/render")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 5 || ps[0].Versions[0].Value != "/render/cluster-api/v1.14.2/core-components.yaml" || ps[4].Name != "docker" {
		t.Fatalf("RepositoryProviders() = %+v", ps)
	}
	var files []string
	for _, f := range ps[4].Versions[0].Files {
		files = append(files, f.TargetName+"="+strings.TrimPrefix(f.SourcePath, c.HarnessDir()))
	}
	for _, f := range []string{"metadata.yaml=" + filepath.Join(filepath.Dir(p), "metadata.yaml"),
		"cluster-template.yaml=" + filepath.Join(filepath.Dir(p), "templates", "cluster-template.yaml"),
		"cluster-template-upgrades.yaml=/data/cluster-template-upgrades.yaml"} {
		if !slices.Contains(files, f) {
			t.Errorf("docker provider files %v lack %s", files, f)
		}
	}
	if slices.Contains(files, "cluster-template.yaml=/data/cluster-template.yaml") {
		t.Errorf("the harness's default template was kept beside the provider's: %v", files)
	}
}

func TestLoadHarnessConfigHasTheBuiltinProviders(t *testing.T) {
	c := loadRepoConfig(t)
	ps, err := c.RepositoryProviders("/render")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Type+"/"+p.Name+"@"+p.Versions[0].Name)
	}
	want := []string{"CoreProvider/cluster-api@v1.14.2", "BootstrapProvider/kubeadm@v1.14.2",
		"ControlPlaneProvider/kubeadm@v1.14.2", "InfrastructureProvider/docker@v1.14.2",
		"RuntimeExtensionProvider/test-extension@v1.14.2"}
	if !slices.Equal(got, want) {
		t.Errorf("RepositoryProviders() = %v, want %v", got, want)
	}
	var templates int
	for _, f := range ps[3].Versions[0].Files {
		if strings.HasPrefix(f.TargetName, "cluster-template") {
			templates++
			if _, err := os.Stat(f.SourcePath); err != nil {
				t.Error(err)
			}
		}
	}
	if templates < 5 {
		t.Errorf("CAPD has %d cluster templates, want the 5 flavors of data/", templates)
	}
	if n := len(c.ManagementImages()); n != 7 {
		t.Errorf("ManagementImages() has %d images, want Cluster API's 4, the test extension, the substitute and the cloud controller manager", n)
	}
	// Without the cloud provider, no manager image is loaded.
	c.Variables[VarCloudProvider] = ""
	if n := len(c.ManagementImages()); n != 6 {
		t.Errorf("with %s=\"\", ManagementImages() has %d images, want 6", VarCloudProvider, n)
	}
}

func TestLoadOverlayErrorsNameTheField(t *testing.T) {
	for _, tt := range []struct{ name, content, want string }{
		{"misspelt key", "build:\n  goImagez: []\n", `unknown field "goImagez"`},
		{"bad interval", "intervals:\n  default/wait-cluster: [\"4m\", \"1s\", \"1s\"]\n", "intervals[default/wait-cluster]: Invalid value: want [timeout] or [timeout, poll], got 3 values"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := writeOverlay(t, tt.content)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("Load() = %v, want an error naming %s and containing %q", err, p, tt.want)
			}
		})
	}
}

// fakeTree writes the files a cluster-api working tree is recognised by.
func fakeTree(t *testing.T, series string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "api/go.mod", "test/go.mod"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("module x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n" + series
	if err := os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestClusterAPISourceFromTheEnvironment(t *testing.T) {
	tree := fakeTree(t, "- {major: 1, minor: 14, contract: v1beta2}\n- {major: 1, minor: 9, contract: v1beta1}\n")
	t.Setenv(EnvClusterAPISource, tree)
	c := loadRepoConfig(t)
	if got := c.ClusterAPIVersion(); got != "v1.14.99" {
		t.Errorf("ClusterAPIVersion() = %q, want v1.14.99 (upstream's name of a tree of the 1.14 series)", got)
	}
	if got := c.BuiltinProviders()[3].Image; got != "registry.k8s.io/cluster-api/capd-manager:dev" {
		t.Errorf("CAPD image = %q, want the dev tag", got)
	}
	if !slices.Contains(c.Overrides(), EnvClusterAPISource) {
		t.Errorf("Overrides() = %v", c.Overrides())
	}
	comp, md := c.RenderedComponents("/r", c.BuiltinProviders()[0])
	if comp != "/r/cluster-api/v1.14.99/core-components.yaml" || md != "/r/cluster-api/v1.14.99/metadata.yaml" {
		t.Errorf("RenderedComponents() = %s, %s", comp, md)
	}

	t.Setenv(EnvClusterAPISource, t.TempDir())
	_, err := Load(repoConfig)
	if err == nil || !strings.Contains(err.Error(), "build.clusterAPI.source (CAPI_SOURCE_DIR):") || !strings.Contains(err.Error(), "is not a cluster-api working tree") {
		t.Errorf("Load with an empty tree = %v", err)
	}
}

func TestPolicyFor(t *testing.T) {
	r := Registry{Policy: PolicyPullElseBuild, Policies: map[string]string{"node/*": PolicyBuild, "node/v1.37.2": PolicyPull}}
	for _, tt := range []struct {
		step      string
		published bool
		mirror    string
		want      string
	}{
		{"etcd/v3.6.8", true, "", PolicyPullElseBuild},
		{"node/v1.36.3", true, "", PolicyBuild},
		{"node/v1.37.2", true, "", PolicyPull},
		{"kind-base", false, "", PolicyBuild},
		{"kind-base", false, "127.0.0.1:5001", PolicyPullElseBuild},
	} {
		r.Mirror = tt.mirror
		if got := r.PolicyFor(tt.step, tt.published); got != tt.want {
			t.Errorf("PolicyFor(%s, published %t, mirror %q) = %q, want %q", tt.step, tt.published, tt.mirror, got, tt.want)
		}
	}
}

func TestEnvironmentVariablesAreValidated(t *testing.T) {
	t.Setenv(VarKubernetesVersion, "v1.35.0")
	_, err := Load(repoConfig)
	if err == nil || !strings.Contains(err.Error(), `variables.KUBERNETES_VERSION (environment): Invalid value: "v1.35.0" has no build.kubernetes entry`) {
		t.Errorf("Load with KUBERNETES_VERSION=v1.35.0 = %v", err)
	}
}

// TestPreviousVersionFromTheEnvironment: CAPI_PREVIOUS_VERSION replaces
// build.clusterAPI.previous.version, and a bad one is named with the
// variable.
func TestPreviousVersionFromTheEnvironment(t *testing.T) {
	t.Setenv(EnvClusterAPIPrevious, "v1.13.5")
	c, err := Load(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Build.ClusterAPI.Previous.Version; got != "v1.13.5" {
		t.Errorf("build.clusterAPI.previous.version = %q, want v1.13.5", got)
	}
	for v, want := range map[string]string{
		"v1.14.2": `build.clusterAPI.previous.version (CAPI_PREVIOUS_VERSION): Invalid value: "v1.14.2" is not older than build.clusterAPI.version`,
		"v1.12.5": `build.clusterAPI.previous.version (CAPI_PREVIOUS_VERSION): Invalid value: "v1.12.5" is older than v1.13.0, the first release whose CAPD serves the DevMachinePoolTemplate`,
	} {
		t.Setenv(EnvClusterAPIPrevious, v)
		if _, err := Load(repoConfig); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load with CAPI_PREVIOUS_VERSION=%s = %v, want %s", v, err, want)
		}
	}
}
