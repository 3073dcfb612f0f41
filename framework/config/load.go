package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"sigs.k8s.io/yaml"
)

// Default module paths of the run's part of the build section, used where
// the config leaves "module" unset.
const (
	DefaultKubeRouterModule = "github.com/cloudnativelabs/kube-router/v2"
	DefaultCertManager      = "github.com/cert-manager/cert-manager"
	DefaultKustomizeModule  = "sigs.k8s.io/kustomize/kustomize/v5"
)

// Other defaults of the build section.
const (
	DefaultImageRepository = "registry.k8s.io"
	// DefaultTestImageRepository is where Kubernetes' e2e test images
	// live (test/utils/image/manifest.go's promoter E2E registry).
	DefaultTestImageRepository = "registry.k8s.io/e2e-test-images"
)

// Environment variables that override build settings at load time. An
// empty value counts as unset.
const (
	// EnvClusterAPISource overrides build.clusterAPI.source; a relative
	// path is relative to the working directory.
	EnvClusterAPISource = "CAPI_SOURCE_DIR"
	// EnvClusterAPIPrevious overrides build.clusterAPI.previous.version
	// (and sets build.clusterAPI.previous when the file has none): the
	// release the clusterctl-upgrade spec starts from.
	EnvClusterAPIPrevious = "CAPI_PREVIOUS_VERSION"
	// EnvImagePolicy overrides build.registry.policy.
	EnvImagePolicy = "IMAGE_POLICY"
	// EnvImageMirror overrides build.registry.mirror.
	EnvImageMirror = "IMAGE_MIRROR"
	// EnvImagePublish overrides build.registry.publish.
	EnvImagePublish = "IMAGE_PUBLISH"
	// EnvHarnessRoot names the harness's root directory (the one holding
	// config/e2e.yaml and data/) when it cannot be found from this
	// package's source location (a binary built with -trimpath).
	EnvHarnessRoot = "CAPD_E2E_ROOT"
)

// harnessModule is this repository's module path.
const harnessModule = "github.com/capd-e2e/capd-e2e"

// HarnessRoot returns the root of the harness: $CAPD_E2E_ROOT, or the
// directory of this module's go.mod, found from this source file's location
// (a checkout, or the module cache when a provider's suite imports the
// harness).
func HarnessRoot() (string, error) {
	if d := os.Getenv(EnvHarnessRoot); d != "" {
		return filepath.Abs(d)
	}
	_, file, _, ok := goruntime.Caller(0)
	if ok && filepath.IsAbs(file) {
		for d := filepath.Dir(file); filepath.Dir(d) != d; d = filepath.Dir(d) {
			data, err := os.ReadFile(filepath.Join(d, "go.mod"))
			if err == nil {
				if bytes.Contains(data, []byte("module "+harnessModule+"\n")) {
					return d, nil
				}
				break
			}
		}
	}
	return "", fmt.Errorf("cannot find the harness's files (config/e2e.yaml, data/): set %s to the root of %s", EnvHarnessRoot, harnessModule)
}

// DefaultPath returns the harness's own config file, config/e2e.yaml under
// HarnessRoot.
func DefaultPath() (string, error) {
	root, err := HarnessRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "e2e.yaml"), nil
}

// Load reads the config file at path, merges it over the harness's own
// config (unless it is that file), applies the environment overrides of
// build settings, fills in defaults and validates the result.
//
// A provider's file names only what is its own: its providers, images,
// variables, intervals and build settings (build.goImages, say). Merging:
// a scalar set in the file wins; images, variables and intervals are
// merged by name, the file's entries winning; providers as described on
// Config.Providers; within build, maps are merged key by key, goImages by
// image, and any other list the file sets replaces the harness's.
// Relative paths resolve against the directory of the file that holds
// them.
//
// The error of a config that does not validate lists every problem, each
// naming its field.
func Load(path string) (*Config, error) {
	base, err := DefaultPath()
	if err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	return LoadWithBase(path, base)
}

// LoadWithBase is Load with another base config than the harness's; an
// empty base means none.
func LoadWithBase(path, base string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	c, err := readFile(abs)
	if err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	if base != "" {
		if base, err = filepath.Abs(base); err != nil {
			return nil, fmt.Errorf("load config %q: %w", path, err)
		}
		if !sameFile(abs, base) {
			b, err := readFile(base)
			if err != nil {
				return nil, fmt.Errorf("load config %q: base config: %w", path, err)
			}
			if c, err = merge(b, c); err != nil {
				return nil, fmt.Errorf("load config %q: merge over %s: %w", path, base, err)
			}
			c.basePath = base
		}
	}
	if err := c.finish(); err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	return c, nil
}

func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// Parse is Load for one config held in memory, without a base; relative
// paths in it resolve against dir.
func Parse(data []byte, dir string) (*Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	c, err := parse(data, filepath.Join(abs, "e2e.yaml"))
	if err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	if err := c.finish(); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	return c, nil
}

func readFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(data, path)
}

// parse reads one file strictly (a misspelt key is an error here rather
// than a silently missing value, unlike upstream) and makes its paths
// absolute. The build section is kept as written, to be merged and then
// decoded by decodeBuild.
func parse(data []byte, path string) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("the file is empty")
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	build, ok := doc["build"].(map[string]any)
	if !ok && doc["build"] != nil {
		return nil, fmt.Errorf("build: not a mapping")
	}
	delete(doc, "build")
	c := &Config{}
	if err := decodeStrict(doc, c); err != nil {
		return nil, err
	}
	c.path = path
	c.rawBuild = build
	c.absPaths(filepath.Dir(path))
	absRawBuild(c.rawBuild, filepath.Dir(path))
	return c, nil
}

// decodeStrict decodes v, a document read by yaml.Unmarshal, into out,
// rejecting unknown keys.
func decodeStrict(v any, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, out)
}

// decodeBuild decodes the run's part of the (merged) build section into
// c.Build, strictly: a key that is neither the run's nor one of
// FactoryKeys is an error.
func (c *Config) decodeBuild() error {
	raw := stripKeys(deepCopy(c.rawBuild), FactoryKeys())
	c.Build = Build{}
	if err := decodeStrict(raw, &c.Build); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	return nil
}

// FactoryBuild returns the image factory's part of the build section (the
// keys FactoryKeys lists, each list entry kept in place so that
// build.kubernetes[i] lines up with Build.Kubernetes[i]), merged and with
// its paths absolute, for the factory to decode strictly.
func (c *Config) FactoryBuild() map[string]any {
	return projectKeys(c.rawBuild, FactoryKeys())
}

// finish applies the environment overrides, fills in defaults, derives
// what depends on files outside the config and validates.
func (c *Config) finish() error {
	root, err := HarnessRoot()
	if err != nil {
		return err
	}
	c.harnessRoot = root
	if err := c.decodeBuild(); err != nil {
		return err
	}
	c.applyEnv()
	c.Default()
	var e Errors
	c.resolveClusterAPISource(&e)
	if len(e) > 0 {
		return e.Err()
	}
	return c.Validate()
}

// applyEnv applies the Env* overrides of build settings.
func (c *Config) applyEnv() {
	set := func(env string, field *string, abs bool) {
		v := os.Getenv(env)
		if v == "" {
			return
		}
		if abs {
			if a, err := filepath.Abs(v); err == nil {
				v = a
			}
		}
		*field = v
		c.overrides = append(c.overrides, env)
	}
	set(EnvClusterAPISource, &c.Build.ClusterAPI.Source, true)
	if os.Getenv(EnvClusterAPIPrevious) != "" {
		if c.Build.ClusterAPI.Previous == nil {
			c.Build.ClusterAPI.Previous = &PreviousClusterAPI{}
		}
		set(EnvClusterAPIPrevious, &c.Build.ClusterAPI.Previous.Version, false)
	}
	set(EnvImagePolicy, &c.Build.Registry.Policy, false)
	set(EnvImageMirror, &c.Build.Registry.Mirror, false)
	set(EnvImagePublish, &c.Build.Registry.Publish, false)
}

// absPaths makes the file's relative paths absolute against dir: provider
// sources and files (as upstream's AbsPaths) and the variables that hold
// paths; absRawBuild does it for the build section.
func (c *Config) absPaths(dir string) {
	abs := func(p *string) {
		// A URL stays as it is; a path that holds a release marker
		// ("{go://...}") is still a path.
		if *p != "" && !filepath.IsAbs(*p) && !IsNetworkSource(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	files := func(fs []File) {
		for i := range fs {
			abs(&fs[i].SourcePath)
		}
	}
	for i := range c.Providers {
		p := &c.Providers[i]
		for j := range p.Versions {
			v := &p.Versions[j]
			if strings.HasPrefix(v.Value, "file://") {
				v.Value = strings.TrimPrefix(v.Value, "file://")
			}
			abs(&v.Value)
			files(v.Files)
		}
		files(p.Files)
	}
	for _, name := range []string{VarCNI, VarKubetestConfiguration, VarKubetestDualStackConfiguration} {
		if v, ok := c.Variables[name]; ok {
			abs(&v)
			c.Variables[name] = v
		}
	}
}

// Default fills in every unset field that has a default (see the fields'
// doc comments). Load calls it; it is exported for configs built in code.
func (c *Config) Default() {
	for i := range c.Images {
		if c.Images[i].LoadBehavior == "" {
			c.Images[i].LoadBehavior = MustLoad
		}
	}
	for i := range c.Providers {
		p := &c.Providers[i]
		for j := range p.Versions {
			v := &p.Versions[j]
			if v.Type == "" {
				v.Type = KustomizeSource
			}
			defaultFiles(v.Files)
		}
		defaultFiles(p.Files)
	}

	b := &c.Build
	setIfEmpty(&b.KubeRouter.Path, DefaultKubeRouterModule)
	setIfEmpty(&b.CertManager.Path, DefaultCertManager)
	setIfEmpty(&b.Kustomize.Path, DefaultKustomizeModule)
	setIfEmpty(&b.Registry.Policy, PolicyPullElseBuild)
	for i := range b.Kubernetes {
		k := &b.Kubernetes[i]
		if k.NodeImage == "" && k.Version != "" {
			k.NodeImage = "kindest/node:" + k.Version
		}
		setIfEmpty(&k.ImageRepository, DefaultImageRepository)
		if c := k.Conformance; c != nil {
			setIfEmpty(&c.Image, strings.TrimSuffix(k.ImageRepository, "/")+"/conformance:"+k.Version)
			setIfEmpty(&c.TestImageRepository, DefaultTestImageRepository)
		}
	}
}

func defaultFiles(files []File) {
	for i := range files {
		if files[i].TargetName == "" && files[i].SourcePath != "" {
			files[i].TargetName = filepath.Base(files[i].SourcePath)
		}
	}
}

func setIfEmpty(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// Path returns the absolute path of the config file ("<dir>/e2e.yaml" for a
// config from Parse).
func (c *Config) Path() string { return c.path }

// BasePath returns the harness config this one was merged over, or "" when
// it is the harness's own (or came from Parse).
func (c *Config) BasePath() string { return c.basePath }

// Dir returns the directory of the config file.
func (c *Config) Dir() string { return filepath.Dir(c.path) }

// HarnessDir returns the harness's root directory (see HarnessRoot), where
// the built-in providers' cluster templates are.
func (c *Config) HarnessDir() string { return c.harnessRoot }

// Overrides returns the environment variables that changed build settings
// when the config was loaded.
func (c *Config) Overrides() []string { return append([]string(nil), c.overrides...) }

// ResolvePath makes p absolute against Dir; an absolute p is returned
// cleaned.
func (c *Config) ResolvePath(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Dir(), p)
}
