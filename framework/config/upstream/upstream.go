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

	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/yaml"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// E2EConfig reads upstream's E2EConfig from the same bytes c was read from,
// the way upstream's LoadE2EConfig does (lenient YAML, Defaults, AbsPaths
// against the config file's directory), minus ResolveReleases (our
// Validate rejects release markers) and minus upstream's Validate.
//
// Upstream's Validate is left to the caller because it requires every
// provider file to exist, and ours are rendered by `make images`: call it
// once they are.
func E2EConfig(c *config.Config) (*clusterctl.E2EConfig, error) {
	out := &clusterctl.E2EConfig{}
	if err := yaml.Unmarshal(c.Raw(), out); err != nil {
		return nil, fmt.Errorf("read upstream config from %q: %w", c.Path(), err)
	}
	out.Defaults()
	out.AbsPaths(c.Dir())
	return out, nil
}
