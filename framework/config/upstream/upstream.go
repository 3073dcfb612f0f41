// Package upstream turns our config into Cluster API's own
// *clusterctl.E2EConfig, for the parts of the suite that call upstream's
// framework (clusterctl repository, ClusterProxy, the specs).
//
// It lives apart from package config so that `make images`, which needs
// only the build section, does not compile the Cluster API test framework.
// It must not resolve release markers or otherwise use the network.
package upstream

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// E2EConfig derives upstream's E2EConfig from c, the one source of truth
// (nothing is parsed twice): the management cluster name, every image the
// management cluster needs (config.ManagementImages), the repository's
// providers with the built-in ones' components in renderDir
// (config.RepositoryProviders), the variables and the intervals. Paths
// are absolute already.
//
// Upstream's Validate is left to the caller: it requires every provider
// file to exist, and the built-in providers' are rendered at suite setup.
func E2EConfig(c *config.Config, renderDir string) (*clusterctl.E2EConfig, error) {
	providers, err := c.RepositoryProviders(renderDir)
	if err != nil {
		return nil, err
	}
	out := &clusterctl.E2EConfig{
		ManagementClusterName: c.ManagementClusterName,
		Variables:             map[string]string{},
		Intervals:             map[string][]string{},
	}
	for _, img := range c.ManagementImages() {
		out.Images = append(out.Images, clusterctl.ContainerImage{Name: img.Name, LoadBehavior: clusterctl.LoadImageBehavior(img.LoadBehavior)})
	}
	for _, p := range providers {
		up := clusterctl.ProviderConfig{Name: p.Name, Type: p.Type, Files: files(p.Files)}
		for _, v := range p.Versions {
			uv := clusterctl.ProviderVersionSource{Name: v.Name, Value: v.Value, Contract: v.Contract,
				Type: clusterctl.ComponentSourceType(v.Type), Files: files(v.Files)}
			for _, r := range v.Replacements {
				uv.Replacements = append(uv.Replacements, clusterctl.ComponentReplacement{Old: r.Old, New: r.New})
			}
			up.Versions = append(up.Versions, uv)
		}
		out.Providers = append(out.Providers, up)
	}
	// What the specs need of each version's build entry, which upstream's
	// config has no place for: its pause image, and its conformance
	// section. A variable of the same name in the config wins.
	for _, k := range c.Build.Kubernetes {
		out.Variables[config.PauseImageVariable(k.Version)] = k.Pause.Image
		if k.Conformance != nil {
			out.Variables[config.ConformanceImageVariable(k.Version)] = k.ConformanceImage()
			out.Variables[config.ConformanceTestImagesVariable(k.Version)] = strings.Join(k.TestImageRefs(), " ")
		}
	}
	for k, v := range c.Variables {
		out.Variables[k] = v
	}
	// Always [timeout, poll]: our config allows the poll to be left out,
	// upstream's helpers index both.
	for k := range c.IntervalsByKey {
		spec, key, _ := strings.Cut(k, "/")
		timeout, poll, err := c.Intervals(spec, key)
		if err != nil {
			return nil, err
		}
		out.Intervals[k] = []string{timeout.String(), poll.String()}
	}
	out.Defaults()
	return out, nil
}

// Intervals returns the timeout and poll interval of key for spec in e,
// with the rules of the typed config (config.IntervalsOf): "<spec>/<key>",
// else "default/<key>"; [timeout] or [timeout, poll], poll defaulting to
// config.DefaultPollInterval. A suite that passes an E2EConfig of its own
// (loaded by upstream's loader) gets the same answer as one derived by
// E2EConfig.
func Intervals(e *clusterctl.E2EConfig, spec, key string) (timeout, poll time.Duration, err error) {
	if e == nil {
		return 0, 0, fmt.Errorf("intervals %s/%s: no E2EConfig", spec, key)
	}
	return config.IntervalsOf(e.Intervals, spec, key)
}

func files(fs []config.File) []clusterctl.Files {
	var out []clusterctl.Files
	for _, f := range fs {
		out = append(out, clusterctl.Files{SourcePath: f.SourcePath, TargetName: f.TargetName})
	}
	return out
}
