package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/manifests"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/images"
)

// PreviousRelease is the Cluster API release the clusterctl-upgrade spec
// upgrades from (build.clusterAPI.previous), as setup prepared it.
type PreviousRelease struct {
	// Version is the release, e.g. "v1.13.4".
	Version string
	// Clusterctl is the path of its clusterctl binary.
	Clusterctl string
	// CoreProvider, BootstrapProvider, ControlPlaneProvider and
	// InfrastructureProvider are its providers as clusterctl init takes
	// them ("cluster-api:v1.13.4", "kubeadm:v1.13.4", ...); the local
	// repository holds their components.
	CoreProvider, BootstrapProvider, ControlPlaneProvider, InfrastructureProvider string
}

// PreviousRelease returns the release to upgrade from, or nil when the
// config has none or no selected spec needs it (setup then neither
// renders its components nor gets its clusterctl).
func (e *Environment) PreviousRelease() *PreviousRelease {
	if e == nil || e.cfg == nil || e.cfg.Build.ClusterAPI.Previous == nil || e.previousClusterctl == "" {
		return nil
	}
	v := e.cfg.Build.ClusterAPI.Previous.Version
	p := &PreviousRelease{Version: v, Clusterctl: e.previousClusterctl}
	for _, b := range e.cfg.PreviousProviders() {
		ref := b.Name + ":" + v
		switch b.Type {
		case config.CoreProvider:
			p.CoreProvider = ref
		case config.BootstrapProvider:
			p.BootstrapProvider = ref
		case config.ControlPlaneProvider:
			p.ControlPlaneProvider = ref
		case config.InfrastructureProvider:
			p.InfrastructureProvider = ref
		}
	}
	return p
}

// ManagementCluster is a further kind management cluster of the run
// (CreateManagementCluster).
type ManagementCluster struct {
	// Proxy is the cluster's proxy, named after the cluster: its artifacts
	// go to clusters/<name>/.
	Proxy framework.ClusterProxy

	env  *Environment
	kind *bootstrap.KindCluster
	dir  string
}

// CreateManagementCluster creates a kind cluster like the suite's own
// management cluster, without any provider: the node image of
// KUBERNETES_VERSION_MANAGEMENT, the host's engine socket mounted (CAPD
// needs it), every management image loaded (the providers under test,
// the cert-manager substitute, the cloud-controller-manager) and, with a
// previous release, that release's controllers; cert-manager's CRDs and
// the substitute installed and Available, so that any clusterctl's init
// finds a working cert-manager (clusterctl before v1.14 has no
// cert-manager.externallyProvisioned: it skips installing cert-manager
// only when one answers). The cluster is tracked by the run: what a
// killed run leaves is reaped. Call Delete when done, also when this
// returns an error with a non-nil cluster.
func (e *Environment) CreateManagementCluster(ctx context.Context, name string) (*ManagementCluster, error) {
	if e == nil || e.cfg == nil || e.tracker == nil {
		return nil, errors.New("create a management cluster: the suite is not set up")
	}
	version, _ := e.cfg.LookupVariable(config.VarKubernetesVersionManagement)
	k, err := e.cfg.Build.KubernetesVersion(version)
	if err != nil {
		return nil, fmt.Errorf("create management cluster %q: variables.%s: %w", name, config.VarKubernetesVersionManagement, err)
	}
	if err := e.tracker.Track(ctx, name); err != nil {
		return nil, err
	}
	imgs := e.cfg.ManagementImages()
	for _, b := range e.cfg.PreviousProviders() {
		imgs = append(imgs, config.Image{Name: b.Image, LoadBehavior: config.MustLoad})
	}
	refs, err := images.ToLoad(ctx, e.Runtime, imgs, nil)
	if err != nil {
		return nil, fmt.Errorf("create management cluster %q: %w", name, err)
	}
	dir, err := os.MkdirTemp("", "capd-e2e-"+name+"-")
	if err != nil {
		return nil, err
	}
	m := &ManagementCluster{env: e, dir: dir}
	m.kind, err = bootstrap.CreateKind(ctx, bootstrap.KindOptions{
		Name:              name,
		NodeImage:         k.NodeImage,
		MountDockerSocket: true,
		KubeconfigPath:    filepath.Join(dir, "kubeconfig"),
		LogFolder:         filepath.Join(e.ArtifactFolder, "kind", name),
		Runtime:           e.Runtime,
		EnableOwnerReferencesPermissionEnforcement: true,
		NoWait: true,
		Images: refs,
	})
	if err != nil {
		// CreateKind removes what it made when it fails.
		m.kind = nil
		return m, err
	}
	m.Proxy = newNamedProxy(name, m.kind.KubeconfigPath, e.BootstrapClusterProxy.GetScheme(), e.Runtime)
	if err := e.installCertManager(ctx, m.Proxy, manifests.WaitAll, manifests.Options{HostNetwork: true}); err != nil {
		return m, err
	}
	return m, nil
}

// Delete collects the cluster's node logs and container snapshot into
// clusters/<name>/, deletes it unless the run keeps its clusters
// (SkipCleanup) and checks that none of its containers is left.
func (m *ManagementCluster) Delete(ctx context.Context) error {
	if m == nil {
		return nil
	}
	var errs []error
	if m.Proxy != nil {
		m.Proxy.Dispose(ctx)
	}
	if m.kind != nil {
		errs = append(errs, collectKind(ctx, m.kind, m.env.Runtime, filepath.Join(m.env.ArtifactFolder, "clusters", m.kind.Name)))
		if m.env.SkipCleanup {
			return errors.Join(errs...)
		}
		errs = append(errs, deleteKind(ctx, m.kind, m.env.Runtime))
	}
	if !m.env.SkipCleanup {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}
