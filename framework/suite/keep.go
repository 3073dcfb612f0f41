package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capd-e2e/capd-e2e/framework/kept"
)

// Environment variables of a kept environment (make up, or a run with
// SKIP_RESOURCE_CLEANUP).
const (
	// EnvKeep names the environment a run with SkipCleanup keeps; if
	// unset, "run-<run id>". `make clean-e2e` and later runs leave a kept
	// environment alone until it is named (`make down NAME=...`).
	EnvKeep = "CAPD_E2E_KEEP"
	// EnvEnvDir is where a kept environment's kubeconfigs are written:
	// management.kubeconfig, <cluster>.kubeconfig per workload cluster
	// (and workload.kubeconfig when there is one), and env.json
	// (framework/kept).
	EnvEnvDir = "CAPD_E2E_ENV_DIR"
	// EnvWorkloadCluster names, as "namespace/name", a workload cluster
	// of the management cluster that a spec able to work on an existing
	// cluster uses instead of creating its own (`make iterate` sets it to
	// the cluster `make up` kept). Unset: every spec creates its cluster.
	EnvWorkloadCluster = "CAPD_E2E_WORKLOAD_CLUSTER"
)

// keep marks the run as kept, so that no later run and no `make
// clean-e2e` without its name reaps it, and writes how to reach it into
// EnvEnvDir.
func (e *Environment) keep(ctx context.Context) error {
	if e.tracker == nil {
		return nil // nothing was created
	}
	name := os.Getenv(EnvKeep)
	if name == "" {
		name = "run-" + e.RunID
	}
	if err := e.tracker.Keep(ctx, name); err != nil {
		return err
	}
	e.log("teardown: kept as %q (SkipCleanup): later runs leave it; `make down NAME=%s` removes it", name, name)
	dir := os.Getenv(EnvEnvDir)
	if dir == "" || e.BootstrapClusterProxy == nil {
		return nil
	}
	return e.writeAccess(ctx, name, dir)
}

// writeAccess writes the kubeconfigs of the management cluster and of
// every workload cluster it manages, and env.json (framework/kept), into
// dir.
func (e *Environment) writeAccess(ctx context.Context, name, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := os.ReadFile(e.BootstrapClusterProxy.GetKubeconfigPath())
	if err != nil {
		return fmt.Errorf("the management cluster's kubeconfig: %w", err)
	}
	var errs []error
	write := func(file string, data []byte) {
		errs = append(errs, os.WriteFile(filepath.Join(dir, file), data, 0o600))
	}
	write(kept.ManagementKubeconfig, data)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := e.BootstrapClusterProxy.GetClient()
	clusters := &clusterv1.ClusterList{}
	if err := c.List(ctx, clusters); err != nil {
		return errors.Join(append(errs, fmt.Errorf("list the workload clusters: %w", err))...)
	}
	var names []string
	for _, cl := range clusters.Items {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: cl.Name + "-kubeconfig"}, secret); err != nil {
			errs = append(errs, fmt.Errorf("the kubeconfig of cluster %s/%s: %w", cl.Namespace, cl.Name, err))
			continue
		}
		write(cl.Name+".kubeconfig", secret.Data["value"])
		names = append(names, cl.Namespace+"/"+cl.Name)
		if len(clusters.Items) == 1 {
			write(kept.WorkloadKubeconfig, secret.Data["value"])
		}
	}
	source := ""
	if e.cfg != nil {
		source = e.cfg.Build.ClusterAPI.Source
	}
	// The workload clusters' cloud provider, as DOCKER_CLOUD_PROVIDER
	// says it: a later run against them (make iterate) checks what it
	// does only where it runs.
	cloudProvider := ""
	if e.CloudControllerManager() != nil {
		cloudProvider = "external"
	}
	errs = append(errs, kept.Write(dir, kept.Env{
		Name:              name,
		RunID:             e.RunID,
		ManagementCluster: e.ManagementClusterName,
		ClusterctlConfig:  e.ClusterctlConfigPath,
		Artifacts:         e.ArtifactFolder,
		WorkloadClusters:  names,
		CAPISource:        source,
		CloudProvider:     cloudProvider,
	}))
	return errors.Join(errs...)
}

// ExistingWorkloadCluster returns the cluster EnvWorkloadCluster names,
// or nil when it is unset; a value that is not "namespace/name" is an
// error naming it.
func ExistingWorkloadCluster() (*types.NamespacedName, error) {
	v := os.Getenv(EnvWorkloadCluster)
	if v == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s=%q: want one workload cluster as namespace/name", EnvWorkloadCluster, v)
	}
	return &types.NamespacedName{Namespace: ns, Name: name}, nil
}
