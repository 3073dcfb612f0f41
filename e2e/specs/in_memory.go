package specs

import (
	"context"
	"fmt"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/cluster-api/test/framework"
)

// inMemoryProxy is the management cluster's proxy for an upstream spec
// whose clusters run on CAPD's in-memory backend (ScaleSpec,
// ClusterInPlaceUpdateSpec): each Cluster in the YAML the spec applies
// through CreateOrUpdate or Create is tracked (leak.Tracker) before it is created
// and remembered for the spec's end check. Unlike trackingProxy it
// registers no cleanup and installs no cloud-controller-manager (an
// in-memory cluster has no container to manage), and it is safe for
// concurrent use: ScaleSpec creates its clusters from several goroutines.
type inMemoryProxy struct {
	framework.ClusterProxy
	in CommonInput

	mu       sync.Mutex
	clusters []string
}

func newInMemoryProxy(in CommonInput) *inMemoryProxy {
	return &inMemoryProxy{ClusterProxy: in.BootstrapClusterProxy, in: in}
}

// CreateOrUpdate tracks and remembers the Clusters in resources, then
// applies resources (ScaleSpec's way).
func (p *inMemoryProxy) CreateOrUpdate(ctx context.Context, resources []byte, options ...framework.CreateOrUpdateOption) error {
	if err := p.record(ctx, resources); err != nil {
		return err
	}
	return p.ClusterProxy.CreateOrUpdate(ctx, resources, options...)
}

// Create tracks and remembers the Clusters in resources, then creates
// resources (ApplyClusterTemplateAndWait's way).
func (p *inMemoryProxy) Create(ctx context.Context, resources []byte, options ...framework.CreateOption) error {
	if err := p.record(ctx, resources); err != nil {
		return err
	}
	return p.ClusterProxy.Create(ctx, resources, options...)
}

// record tracks and remembers the Clusters in resources.
func (p *inMemoryProxy) record(ctx context.Context, resources []byte) error {
	clusters, err := clustersIn(resources)
	if err != nil {
		return err
	}
	for _, c := range clusters {
		if p.in.Tracker != nil {
			if err := p.in.Tracker.Track(ctx, c.Name); err != nil {
				return err
			}
		}
		p.mu.Lock()
		if !slices.Contains(p.clusters, c.Name) {
			p.clusters = append(p.clusters, c.Name)
		}
		p.mu.Unlock()
	}
	return nil
}

// created returns the names of the Clusters applied so far.
func (p *inMemoryProxy) created() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.clusters)
}

// checkNothingInEngine registers, for after the spec's own cleanup, the
// check that the in-memory clusters p applied have nothing in the
// container engine: no machine, no load balancer, nothing a tracked
// cluster could own. CAPD's in-memory backend creates none; a container
// labelled with one of their names is a bug of the backend or of the
// harness, and fails the spec (and is removed). With no engine, or
// SkipCleanup, there is nothing to check.
func (p *inMemoryProxy) checkNothingInEngine() {
	DeferCleanup(func(ctx SpecContext) {
		clusters := p.created()
		if p.in.SkipCleanup || p.in.Runtime == nil || len(clusters) == 0 {
			return
		}
		By(fmt.Sprintf("cleanup: nothing of the %d in-memory clusters in the engine", len(clusters)))
		Expect(checkLeaks(ctx, p.in.Runtime, clusters...)).To(Succeed())
	}, NodeTimeout(cleanupAllowance))
}

// The test runtime extension's webhook Service (its config/default), which
// the in-memory ClusterClass's patches call.
const (
	testExtensionNamespace = "test-extension-system"
	testExtensionService   = "test-extension-webhook-service"
)
