package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// DefaultPollInterval is the poll interval of an interval given as
// [timeout] only.
const DefaultPollInterval = 10 * time.Second

// Intervals returns the timeout and poll interval for key in spec:
// "<spec>/<key>" if the config has it, else "default/<key>", as upstream's
// GetIntervals. It is an error when neither exists: a wait without a
// configured interval is a hard-coded wait.
func (c *Config) Intervals(spec, key string) (timeout, poll time.Duration, err error) {
	return IntervalsOf(c.IntervalsByKey, spec, key)
}

// IntervalsOf is Intervals over a map of intervals as the config file and
// upstream's E2EConfig.Intervals hold them ("<spec>/<key>" to [timeout] or
// [timeout, poll]): the one reader of an interval, whichever view holds it.
func IntervalsOf(intervals map[string][]string, spec, key string) (timeout, poll time.Duration, err error) {
	name := spec + "/" + key
	v, ok := intervals[name]
	if !ok {
		name = "default/" + key
		if v, ok = intervals[name]; !ok {
			return 0, 0, fmt.Errorf("intervals: neither %q nor %q is set", spec+"/"+key, name)
		}
	}
	timeout, poll, err = parseInterval(v)
	if err != nil {
		return 0, 0, fmt.Errorf("intervals[%s]: %w", name, err)
	}
	return timeout, poll, nil
}

// LookupVariable returns a variable: the environment variable of that name
// if it is set (even to ""), else the config's value. It is upstream's
// E2EConfig.GetVariable lookup order.
func (c *Config) LookupVariable(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	v, ok := c.Variables[name]
	return v, ok
}

// Variable is LookupVariable for a variable that must be set; the error
// names it.
func (c *Config) Variable(name string) (string, error) {
	v, ok := c.LookupVariable(name)
	if !ok {
		return "", fmt.Errorf("variables.%s: set neither in %s nor in the environment", name, c.path)
	}
	return v, nil
}

// Kube component images kubeadm runs, as named in ComponentImage.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	KubeProxy             = "kube-proxy"
)

// KubeComponents lists the component images of each Kubernetes version.
var KubeComponents = []string{KubeAPIServer, KubeControllerManager, KubeScheduler, KubeProxy}

// ComponentImage returns the reference kubeadm expects for component (one
// of KubeComponents), e.g. "registry.k8s.io/kube-apiserver:v1.36.3".
func (k *Kubernetes) ComponentImage(component string) string {
	return strings.TrimSuffix(k.ImageRepository, "/") + "/" + component + ":" + k.Version
}

// ConformanceImage returns the conformance image of k, or "" when k has
// no conformance section.
func (k *Kubernetes) ConformanceImage() string {
	if k.Conformance == nil {
		return ""
	}
	return k.Conformance.Image
}

// TestImageRefs returns the references of k's e2e test images, e.g.
// "registry.k8s.io/e2e-test-images/agnhost:2.66.1", in config order; none
// when k has no conformance section.
func (k *Kubernetes) TestImageRefs() []string {
	if k.Conformance == nil {
		return nil
	}
	out := make([]string, 0, len(k.Conformance.TestImages))
	for _, img := range k.Conformance.TestImages {
		out = append(out, strings.TrimSuffix(k.Conformance.TestImageRepository, "/")+"/"+img)
	}
	return out
}

// ConformanceImageVariable and ConformanceTestImagesVariable name the
// variables through which upstream's E2EConfig (framework/config/upstream)
// tells the conformance specs a version's conformance image and its e2e
// test images (space separated), e.g. CONFORMANCE_IMAGE_1_37_2.
func ConformanceImageVariable(version string) string {
	return "CONFORMANCE_IMAGE_" + versionSuffix(version)
}

// ConformanceTestImagesVariable: see ConformanceImageVariable.
func ConformanceTestImagesVariable(version string) string {
	return "CONFORMANCE_TEST_IMAGES_" + versionSuffix(version)
}

// PauseImageVariable names the variable through which upstream's
// E2EConfig tells the specs a version's pause image (build.kubernetes[]
// .pause.image), e.g. PAUSE_IMAGE_1_36_3: a spec whose pods run a pause
// image the nodes do not hold can load it from the engine.
func PauseImageVariable(version string) string {
	return "PAUSE_IMAGE_" + versionSuffix(version)
}

func versionSuffix(version string) string {
	return strings.NewReplacer(".", "_", "-", "_", "+", "_").Replace(strings.TrimPrefix(version, "v"))
}

// KubernetesVersion returns the build.kubernetes entry for version; the
// leading "v" may be omitted.
func (b *Build) KubernetesVersion(version string) (*Kubernetes, error) {
	if version != "" && !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	for i := range b.Kubernetes {
		if b.Kubernetes[i].Version == version {
			return &b.Kubernetes[i], nil
		}
	}
	return nil, fmt.Errorf("build.kubernetes: no entry for version %q (have %s)", version, strings.Join(b.KubernetesVersions(), ", "))
}

// KubernetesVersions returns the versions of build.kubernetes, in file
// order.
func (b *Build) KubernetesVersions() []string {
	out := make([]string, 0, len(b.Kubernetes))
	for _, k := range b.Kubernetes {
		out = append(out, k.Version)
	}
	return out
}
