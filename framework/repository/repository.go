package repository

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/cni"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/internal/catch"
)

// CreateInput is the input of Create.
type CreateInput struct {
	// Config is the run's config. Required.
	Config *config.Config
	// E2EConfig is upstream's view of Config, whose built-in providers
	// point into RenderDir (config/upstream.E2EConfig with RenderDir).
	// Required.
	E2EConfig *clusterctl.E2EConfig
	// RenderDir receives the rendered components and CNI manifest, which
	// CreateRepository copies into the repository. Required.
	RenderDir string
	// RepositoryDir is where the repository and its clusterctl config are
	// written. Required. A repository an earlier run wrote there is
	// removed first; a folder holding anything else is an error.
	RepositoryDir string
}

// Create renders the built-in providers' components and the CNI manifest
// into RenderDir and creates the local clusterctl repository in
// RepositoryDir with upstream's CreateRepository (which builds the config's
// kustomize-type providers with the harness's kustomize unless
// CAPI_KUSTOMIZE_PATH names one), with cert-manager marked as provided by
// the harness (UseExternalCertManager). It returns the clusterctl config's
// path. Startup probes are added separately (AddStartupProbes).
func Create(ctx context.Context, in CreateInput) (string, error) {
	if in.Config == nil || in.E2EConfig == nil || in.RenderDir == "" || in.RepositoryDir == "" {
		return "", fmt.Errorf("create the clusterctl repository: CreateInput.Config, E2EConfig, RenderDir and RepositoryDir are required")
	}
	// clusterctl init installs the latest version a repository holds: one
	// an earlier run with another config left (a Cluster API tree's
	// v1.14.99 beside the release's v1.14.2) would be installed, with
	// images this run never loaded.
	if err := clearPrevious(in.RepositoryDir); err != nil {
		return "", err
	}
	cfg := in.Config
	if _, err := Components(ctx, cfg, in.RenderDir); err != nil {
		return "", err
	}
	// The CNI of the clusters: CNI_RESOURCES, CNI_RESOURCES_DUALSTACK for
	// the dual-stack flavors and CNI_RESOURCES_IPV6 for the IPv6-only one.
	// A CNI the user names serves all three.
	manifest, ok := cfg.LookupVariable(config.VarCNI)
	dualStack, ipv6 := "", ""
	if !ok || manifest == "" {
		manifest = filepath.Join(in.RenderDir, "cni", "kube-router.yaml")
		if err := cni.WriteKubeRouterManifest(ctx, cfg, manifest); err != nil {
			return "", err
		}
		dualStack = filepath.Join(in.RenderDir, "cni", "kube-router-dualstack.yaml")
		if err := cni.WriteKubeRouterDualStackManifest(ctx, cfg, dualStack); err != nil {
			return "", err
		}
		ipv6 = filepath.Join(in.RenderDir, "cni", "kube-router-ipv6.yaml")
		if err := cni.WriteKubeRouterIPv6Manifest(ctx, cfg, ipv6); err != nil {
			return "", err
		}
	} else {
		manifest = cfg.ResolvePath(manifest)
		dualStack, ipv6 = manifest, manifest
	}
	// Upstream's CreateRepository runs kustomize for providers of type
	// kustomize; give it the harness's, unless the user chose one.
	if _, set := os.LookupEnv("CAPI_KUSTOMIZE_PATH"); !set {
		k, err := Kustomize(ctx, cfg.Build.Kustomize)
		if err != nil {
			return "", err
		}
		if err := os.Setenv("CAPI_KUSTOMIZE_PATH", k); err != nil {
			return "", err
		}
	}
	var path string
	err := catch.Run(func() {
		cin := clusterctl.CreateRepositoryInput{E2EConfig: in.E2EConfig, RepositoryFolder: in.RepositoryDir}
		cin.RegisterClusterResourceSetConfigMapTransformation(manifest, "CNI_RESOURCES")
		cin.RegisterClusterResourceSetConfigMapTransformation(dualStack, "CNI_RESOURCES_DUALSTACK")
		cin.RegisterClusterResourceSetConfigMapTransformation(ipv6, "CNI_RESOURCES_IPV6")
		path = clusterctl.CreateRepository(ctx, cin)
	})
	if err != nil {
		return "", fmt.Errorf("create the clusterctl repository in %s: %w", in.RepositoryDir, err)
	}
	if err := UseExternalCertManager(path); err != nil {
		return "", err
	}
	return path, nil
}

// configFile is the clusterctl config CreateRepository writes into a
// repository folder.
const configFile = "clusterctl-config.yaml"

// clearPrevious removes the repository an earlier run wrote into dir. A
// missing or empty dir is fine; a dir with files but no configFile is not
// a repository and is left, with an error naming it.
func clearPrevious(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, configFile)); err != nil {
		return fmt.Errorf("the clusterctl repository folder %s holds files but no %s: not a repository an earlier run wrote; give the run an empty folder", dir, configFile)
	}
	return os.RemoveAll(dir)
}
