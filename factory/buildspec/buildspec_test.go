package buildspec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

const repoConfig = "../../config/e2e.yaml"

func loadRepo(t *testing.T) *Build {
	t.Helper()
	b, err := LoadFile(repoConfig)
	if err != nil {
		t.Fatalf("LoadFile(%s): %v", repoConfig, err)
	}
	return b
}

func TestLoadRepoConfig(t *testing.T) {
	b := loadRepo(t)
	k := b.Kubernetes[1]
	checks := map[string][2]string{
		"kind version":   {b.Kind.Version, "v0.33.0"},
		"crictl":         {b.Crictl.String(), "sigs.k8s.io/cri-tools@v1.36.0"},
		"runtime source": {b.ContainerRuntime.Source, RuntimeFromModules},
		"etcd":           {k.Etcd.String(), "go.etcd.io/etcd/server/v3@v3.7.0"},
		// The run's part, read through the factory's entry.
		"etcd image":       {k.Etcd.Image, "registry.k8s.io/etcd:3.7.0-0"},
		"node image":       {k.NodeImage, "kindest/node:v1.37.2"},
		"pause image":      {k.Pause.Image, "registry.k8s.io/pause:3.10.2"},
		"conformance":      {k.Conformance.Image, "registry.k8s.io/conformance:v1.37.2"},
		"kube-router":      {b.KubeRouter.Image, "cloudnativelabs/kube-router:v2.1.0"},
		"cluster API":      {b.ClusterAPI.Version, "v1.14.2"},
		"conformance root": {k.Conformance.Rootfs, "e2e-tools"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	// One value for both parts: a change through the factory's entry is
	// the run's.
	b.Kubernetes[0].NodeImage = "example.com/node:v1"
	if got := b.Config.Build.Kubernetes[0].NodeImage; got != "example.com/node:v1" {
		t.Errorf("run's node image = %q after a change through the factory's entry", got)
	}
	if k, err := b.KubernetesVersion("1.37.2"); err != nil || k != &b.Kubernetes[1] {
		t.Errorf("KubernetesVersion(1.37.2) = %p, %v; want the entry %p", k, err, &b.Kubernetes[1])
	}
}

// TestValidateNamesTheField breaks one field of the repo config at a time
// and checks the error names that field.
func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(c *Build)
		want   string
	}{
		{"etcd version", func(c *Build) { c.Kubernetes[1].Etcd.Version = "" },
			"build.kubernetes[1].etcd.version: Required value"},
		{"etcd tag", func(c *Build) { c.Kubernetes[1].Etcd.Version = "v3.7.1" },
			`build.kubernetes[1].etcd.image: Invalid value: tag "3.7.0-0" does not contain the version "3.7.1"`},
		{"coredns not semver", func(c *Build) { c.Kubernetes[0].CoreDNS.Version = "1.14" },
			`build.kubernetes[0].coreDNS.version: Invalid value: "1.14" is not a semantic version`},
		{"pause tag", func(c *Build) { c.Kubernetes[0].Pause.Version = "3.10" },
			`build.kubernetes[0].pause.image: Invalid value: tag "3.10.2" is not the version "3.10"`},
		{"conformance rootfs", func(c *Build) { c.Kubernetes[1].Conformance.Rootfs = "nope" },
			`build.kubernetes[1].conformance.rootfs: Invalid value: no build.debian.rootfs is named "nope"`},
		{"conformance test image name", func(c *Build) { c.Kubernetes[1].Conformance.TestImages[0] = "agnhostx:2.66.1" },
			`build.kubernetes[1].conformance.testImages[0]: Invalid value: "agnhostx:2.66.1": the factory builds no test image "agnhostx"`},
		{"kitten without alpine", func(c *Build) { c.Kubernetes[1].Conformance.Alpine.Version = "" },
			`build.kubernetes[1].conformance.alpine.version: Required value: testImages[5] "kitten:1.8" is built on Alpine's minirootfs`},
		{"alpine version", func(c *Build) { c.Kubernetes[1].Conformance.Alpine.Version = "3.24.1" },
			`build.kubernetes[1].conformance.alpine.version: Invalid value: "3.24.1" is not a semantic version`},
		{"conformance test image of two versions", func(c *Build) {
			r := &config.Conformance{TestImages: []string{"agnhost:2.66.1"}, TestImageRepository: config.DefaultTestImageRepository, Image: "registry.k8s.io/conformance:v1.36.3"}
			c.Kubernetes[0].Kubernetes.Conformance = r
			c.Kubernetes[0].Conformance = &Conformance{Conformance: r, Rootfs: "e2e-tools"}
		}, `image "registry.k8s.io/e2e-test-images/agnhost:2.66.1" is also built by`},
		{"go image source", func(c *Build) {
			c.GoImages = []GoImage{{Image: "example.com/m:dev", Package: ".", Binary: "/manager"}}
		}, "build.goImages[0].module: Required value"},
		{"go image dir and module", func(c *Build) {
			c.GoImages = []GoImage{{Image: "example.com/m:dev", Package: ".", Binary: "/manager", Dir: "/", Module: "example.com/m", Version: "v1.0.0"}}
		}, "build.goImages[0]: Invalid value: set either dir or module and version, not both"},
		{"go image dir", func(c *Build) {
			c.GoImages = []GoImage{{Image: "example.com/m:dev", Package: ".", Binary: "/manager", Dir: "/nonexistent/provider"}}
		}, `build.goImages[0].dir: Invalid value: "/nonexistent/provider" is not a directory`},
		{"go image collides", func(c *Build) {
			c.GoImages = []GoImage{{Image: c.LoadBalancer.Image, Package: "x", Binary: "/manager", Module: "example.com/m", Version: "v1.0.0"}}
		}, `build.goImages[0].image: Invalid value: image "kindest/haproxy:v20230606-42a2262b" is also built by build.loadBalancer.image`},
		{"unknown rootfs", func(c *Build) { c.KubeRouter.Rootfs = "tools" },
			`build.kubeRouter.rootfs: Invalid value: no build.debian.rootfs is named "tools"`},
		{"duplicate rootfs", func(c *Build) { c.Debian.Rootfs[1].Name = "node" },
			`build.debian.rootfs[1].name: Invalid value: duplicate rootfs "node"`},
		{"debian runtime packages", func(c *Build) {
			c.ContainerRuntime.Source = RuntimeFromDebian
			c.Debian.Rootfs[0].Packages = []string{"systemd"}
		},
			`build.containerRuntime.source: Invalid value: "debian" needs package "containerd" in rootfs "node"`},
		{"module runtime versions", func(c *Build) {
			c.ContainerRuntime.Source = RuntimeFromModules
			c.ContainerRuntime.Runc.Version = ""
		}, "build.containerRuntime.runc.version: Required value"},
		{"module runtime and debian's", func(c *Build) {
			c.ContainerRuntime.Source = RuntimeFromModules
			c.Debian.Rootfs[0].Packages = append(c.Debian.Rootfs[0].Packages, "runc")
		}, `build.containerRuntime.source: Invalid value: "modules" builds runc, but rootfs "node" installs Debian's package "runc" too: leave it out`},
		{"runtime source", func(c *Build) { c.ContainerRuntime.Source = "apt" },
			`build.containerRuntime.source: Invalid value: "apt" is not debian or modules`},
		{"mirror", func(c *Build) { c.Debian.Mirror = "deb.debian.org" },
			`build.debian.mirror: Invalid value: "deb.debian.org" is not an http(s):// or file:// URL`},
		{"preload from", func(c *Build) { c.Kubernetes[0].Preload[0].From = "v1.38.0" },
			`build.kubernetes[0].preload[0].from: Invalid value: no build.kubernetes entry has version "v1.38.0"`},
		{"preload component", func(c *Build) { c.Kubernetes[0].Preload[0].Components = []string{"dns"} },
			`build.kubernetes[0].preload[0].components[0]: Invalid value: "dns" is not etcd, coredns, pause or kube-proxy`},
		{"shared pause from two sources", func(c *Build) { c.Kubernetes[1].Pause.Source = "v1.37.2" },
			`build.kubernetes[1].pause.image: Invalid value: image "registry.k8s.io/pause:3.10.2" is also built by build.kubernetes[0].pause.image from other inputs`},
		{"image collision", func(c *Build) { c.Kind.BaseImage = c.Debian.Rootfs[0].Image },
			"build.kind.baseImage: Invalid value: image \"capd-e2e/debian-node:trixie\" is also built by build.debian.rootfs[0].image"},
	}
	for _, tt := range tests {
		c := loadRepo(t)
		tt.break_(c)
		err := c.Validate()
		var fe *field.Error
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v\nwant field errors, one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	// The factory's keys of the smallest config, over the run's.
	cfg, err := config.LoadWithBase("testdata/minimal.yaml", "../../framework/config/testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := b.Kubernetes[0]
	checks := map[string][2]string{
		"etcd module":       {k.Etcd.Path, DefaultEtcdModule},
		"coredns module":    {k.CoreDNS.Path, DefaultCoreDNSModule},
		"pause source":      {k.Pause.Source, "v1.36.3"},
		"kind module":       {b.Kind.Path, DefaultKindModule},
		"kind rootfs":       {b.Kind.Rootfs, DefaultNodeRootfs},
		"runtime":           {b.ContainerRuntime.Source, RuntimeFromDebian},
		"containerd module": {b.ContainerRuntime.Containerd.Path, DefaultContainerdModule},
		"variant":           {b.Debian.Variant, DefaultDebianVariant},
		"kube-proxy rootfs": {b.KubeProxyRootfs, DefaultNetRootfs},
		"router rootfs":     {b.KubeRouter.Rootfs, DefaultNetRootfs},
		"haproxy rootfs":    {b.LoadBalancer.Rootfs, DefaultHAProxyRootfs},
		"go image binary":   {b.GoImages[0].Binary, DefaultGoImageBinary},
		// And the run's defaults, through the factory's entry.
		"node image": {k.NodeImage, "kindest/node:v1.36.3"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range []struct{ name, from, to, want string }{
		{"misspelt key", "suite: trixie", "suitee: trixie", `build: error unmarshaling JSON: while decoding JSON: json: unknown field "suitee"`},
		{"misspelt preload key", "components: [coredns", "componentz: [coredns", `unknown field "componentz"`},
		{"invalid", "suite: trixie", `suite: ""`, "build.debian.suite: Required value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Its relative paths would resolve against the copy's directory.
			kubetest, err := filepath.Abs(filepath.Join(filepath.Dir(repoConfig), "..", "data", "kubetest", "conformance-fast.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv(config.VarKubetestConfiguration, kubetest)
			t.Setenv(config.VarKubetestDualStackConfiguration, filepath.Join(filepath.Dir(kubetest), "dualstack.yaml"))
			repo, err := os.ReadFile(repoConfig)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(repo), tt.from) {
				t.Fatalf("%s holds no %q", repoConfig, tt.from)
			}
			p := filepath.Join(t.TempDir(), "e2e.yaml")
			if err := os.WriteFile(p, []byte(strings.Replace(string(repo), tt.from, tt.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			// The run's part loads: these keys are the factory's.
			cfg, err := config.LoadWithBase(p, "")
			if err != nil {
				t.Fatalf("config.Load: %v", err)
			}
			_, err = Load(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Load() = %v, want an error naming %s and containing %q", err, p, tt.want)
			}
		})
	}
}

// TestMergesAProvidersBuild: a provider's goImages are merged over the
// harness's section by image, its paths relative to its file.
func TestMergesAProvidersBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo", "test", "e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "e2e.yaml")
	overlay := "build:\n  goImages:\n  - {image: example.com/p/manager:dev, dir: ../.., package: ./cmd/manager}\n  debian: {mirror: http://snapshot.example/debian}\n"
	if err := os.WriteFile(p, []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(filepath.Dir(dir))
	checks := map[string][2]string{
		"go image dir":         {b.GoImages[0].Dir, repo},
		"go image binary":      {b.GoImages[0].Binary, DefaultGoImageBinary},
		"own mirror":           {b.Debian.Mirror, "http://snapshot.example/debian"},
		"harness debian suite": {b.Debian.Suite, "trixie"},
		"harness node image":   {b.Kubernetes[0].NodeImage, "kindest/node:v1.36.3"},
	}
	for name, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", name, v[0], v[1])
		}
	}
	if n := len(b.Debian.Rootfs); n == 0 {
		t.Error("the harness's rootfs list was lost in the merge")
	}
	p2 := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(p2, []byte("build:\n  goImages:\n  - {image: example.com/m:dev, package: .}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p2); err == nil || !strings.Contains(err.Error(), "build.goImages[0].module: Required value") {
		t.Errorf("LoadFile(bad go image) = %v", err)
	}
}

// keyPaths returns the JSON key paths of t's leaves, under prefix: a
// struct's fields (embedded untagged ones inline, "-" ones skipped), "[]"
// after a list's key. A struct of a package other than pkg's is a leaf.
func keyPaths(t reflect.Type, prefix, pkg string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			prefix += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || (prefix != "" && t.PkgPath() != pkg) {
		return []string{prefix}
	}
	return fieldPaths(t, prefix, pkg)
}

// fieldPaths is keyPaths of the fields of the struct type t.
func fieldPaths(t reflect.Type, prefix, pkg string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported():
		case f.Anonymous && tag == "":
			out = append(out, fieldPaths(f.Type, prefix, pkg)...)
		default:
			p := tag
			if prefix != "" {
				p = prefix + "." + tag
			}
			out = append(out, keyPaths(f.Type, p, pkg)...)
		}
	}
	return out
}

// TestFactoryKeys: this package's types hold exactly the keys
// config.FactoryKeys leaves to it, and the run's type none of them, so
// that every key of the section is decoded strictly by one of the two.
func TestFactoryKeys(t *testing.T) {
	keys := config.FactoryKeys()
	under := func(path, key string) bool {
		return path == key || strings.HasPrefix(path, key+".") || strings.HasPrefix(path, key+"[]")
	}
	build := reflect.TypeFor[Build]()
	ours := keyPaths(build, "", build.PkgPath())
	for _, p := range ours {
		if !slices.ContainsFunc(keys, func(k string) bool { return under(p, k) }) {
			t.Errorf("build.%s is decoded here but not in config.FactoryKeys: config.Load rejects it", p)
		}
	}
	for _, k := range keys {
		if !slices.ContainsFunc(ours, func(p string) bool { return under(p, k) }) {
			t.Errorf("config.FactoryKeys lists build.%s, which no field here decodes: a misspelling there is never caught", k)
		}
	}
	run := reflect.TypeFor[config.Build]()
	runs := keyPaths(run, "", run.PkgPath())
	for _, p := range runs {
		for _, k := range keys {
			if under(p, k) {
				t.Errorf("build.%s is the run's, and under the factory's key %s", p, k)
			}
		}
	}
	if len(ours) < len(keys) || len(runs) < 20 {
		t.Errorf("walked %d factory and %d run keys: the walk is broken", len(ours), len(runs))
	}
}
