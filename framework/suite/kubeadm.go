package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/binaries"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// kubeadmInNodeImage is where a kind node image holds kubeadm.
const kubeadmInNodeImage = "/usr/bin/kubeadm"

// kubeadmVersions returns the Kubernetes versions whose kubeadm the
// selected specs mount (Requirement.KubeadmBinaries), sorted, once each.
func (s *setup) kubeadmVersions() []string {
	var out []string
	for _, r := range s.in.Requirements {
		for _, name := range r.KubeadmBinaries {
			if v, ok := s.env.cfg.LookupVariable(name); ok && v != "" {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// extractKubeadm copies kubeadm out of the node image of every version of
// kubeadmVersions into a folder of the host, <version>/kubeadm, each
// checked to report its version, and sets KUBEADM_BINARIES_DIR to that
// folder for the templates (unless the environment or the config sets
// it: then that folder is used as it is). The machines mount it from the
// engine's host, so the engine must run on this one, as for the engine
// socket the self-hosted templates mount. Teardown removes the folder.
func (s *setup) extractKubeadm(ctx context.Context) error {
	name := config.VarKubeadmBinariesDir
	if v, ok := os.LookupEnv(name); ok {
		s.log("setup: %s=%s set by the environment: kubeadm is taken from there", name, v)
		return nil
	}
	if v, ok := s.env.E2EConfig.Variables[name]; ok {
		s.log("setup: %s=%s set by the config: kubeadm is taken from there", name, v)
		return nil
	}
	dir, err := os.MkdirTemp("", "capd-e2e-"+s.env.RunID+"-kubeadm-")
	if err != nil {
		return err
	}
	s.env.kubeadmDir = dir
	// The machines run kubeadm as root, from a folder the engine mounts.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	var done []string
	for _, v := range s.kubeadmVersions() {
		k, err := s.env.cfg.Build.KubernetesVersion(v)
		if err != nil {
			return fmt.Errorf("kubeadm %s: %w", v, err)
		}
		dest := filepath.Join(dir, v, "kubeadm")
		if err := binaries.Extract(ctx, s.env.Runtime, binaries.ExtractInput{
			Image: k.NodeImage, Path: kubeadmInNodeImage, VersionArgs: []string{"version", "-o", "short"}, Version: v,
			Dest: dest, Container: "capd-e2e-kubeadm-" + s.env.RunID + "-" + strings.NewReplacer(".", "-", "+", "-").Replace(v),
			Labels: runtime.RunLabels(s.env.RunID, "suite-setup", nil),
		}); err != nil {
			return err
		}
		done = append(done, fmt.Sprintf("%s (from %s)", dest, k.NodeImage))
	}
	if s.env.E2EConfig.Variables == nil {
		s.env.E2EConfig.Variables = map[string]string{}
	}
	s.env.E2EConfig.Variables[name] = dir
	s.log("setup: %s=%s: %s", name, dir, strings.Join(done, ", "))
	return nil
}
