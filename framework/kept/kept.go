// Package kept describes a kept environment: what a run with
// SkipCleanup (`capd-e2e up`, `make up`) leaves running, and how to reach
// it. The suite writes it (framework/suite, when CAPD_E2E_ENV_DIR is set);
// `capd-e2e up`, `down` and `iterate` and docs/explore.md's checks read it.
// One JSON file, env.json, beside the kubeconfigs: Go and every tool
// (jq, kubectl's jsonpath, a provider's scripts) read it the same way,
// where a shell-sourced file depends on the shell's quoting.
//
// The package depends on the standard library alone, so that the command
// line links it without the suite's packages.
package kept

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Files in a kept environment's folder.
const (
	// File describes the environment (Env, as JSON).
	File = "env.json"
	// ManagementKubeconfig reaches the kind management cluster.
	ManagementKubeconfig = "management.kubeconfig"
	// WorkloadKubeconfig reaches the workload cluster, when there is
	// exactly one; every workload cluster also has <name>.kubeconfig.
	WorkloadKubeconfig = "workload.kubeconfig"
)

// Env is a kept environment, as File holds it.
type Env struct {
	// Name is the environment's name (CAPD_E2E_KEEP): `capd-e2e down
	// --name` and `capd-e2e clean --run` take it.
	Name string `json:"name"`
	// RunID is the run id its containers, networks and volumes carry.
	RunID string `json:"runID"`
	// ManagementCluster is the kind management cluster's name.
	ManagementCluster string `json:"managementCluster"`
	// ClusterctlConfig is the clusterctl config the run wrote (its local
	// repository of the providers).
	ClusterctlConfig string `json:"clusterctlConfig"`
	// Artifacts is the run's artifacts folder.
	Artifacts string `json:"artifacts"`
	// WorkloadClusters are the workload clusters, as "namespace/name".
	WorkloadClusters []string `json:"workloadClusters"`
	// CAPISource is the Cluster API tree the controllers were built from
	// (CAPI_SOURCE_DIR), empty for a release.
	CAPISource string `json:"capiSource,omitempty"`
	// CloudProvider is the workload clusters' cloud provider as
	// DOCKER_CLOUD_PROVIDER says it: "external" with the docker
	// cloud-controller-manager, empty without.
	CloudProvider string `json:"cloudProvider,omitempty"`
}

// name is what a kept environment may be called: it names a folder and a
// marker label.
var name = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// CheckName returns an error naming n if it cannot name an environment.
func CheckName(n string) error {
	if len(n) > 63 || !name.MatchString(n) {
		return fmt.Errorf("environment name %q: want up to 63 letters, digits, '_', '.' or '-', starting with a letter or digit", n)
	}
	return nil
}

// Write writes e into dir/File.
func Write(dir string, e Env) error {
	if e.WorkloadClusters == nil {
		e.WorkloadClusters = []string{}
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, File), append(b, '\n'), 0o600)
}

// ErrNotKept is Read's error when dir holds no environment.
var ErrNotKept = errors.New("no kept environment")

// Read reads dir/File; a folder without it is ErrNotKept.
func Read(dir string) (Env, error) {
	var e Env
	b, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return e, fmt.Errorf("%w in %s", ErrNotKept, dir)
	}
	if err != nil {
		return e, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("%s: %w", filepath.Join(dir, File), err)
	}
	if e.Name == "" || e.RunID == "" || e.ManagementCluster == "" {
		return e, fmt.Errorf("%s: name, runID and managementCluster are required", filepath.Join(dir, File))
	}
	return e, nil
}

// Remove removes what Write and the suite wrote into dir (the
// kubeconfigs and File), leaving the artifacts.
func Remove(dir string) error {
	kubeconfigs, err := filepath.Glob(filepath.Join(dir, "*.kubeconfig"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range append(kubeconfigs, filepath.Join(dir, File)) {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
