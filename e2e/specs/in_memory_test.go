package specs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"sigs.k8s.io/cluster-api/test/framework"
)

// applyStub is a management cluster's proxy that only counts what is
// applied to it.
type applyStub struct {
	framework.ClusterProxy
	mu      sync.Mutex
	applied int
}

func (s *applyStub) Create(context.Context, []byte, ...framework.CreateOption) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied++
	return nil
}

func (s *applyStub) CreateOrUpdate(context.Context, []byte, ...framework.CreateOrUpdateOption) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied++
	return nil
}

type trackStub struct {
	mu      sync.Mutex
	tracked []string
}

func (t *trackStub) Track(_ context.Context, cluster string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracked = append(t.tracked, cluster)
	return nil
}

// TestInMemoryProxyRecordsEveryCluster: Clusters applied through Create
// (ApplyClusterTemplateAndWait) and through CreateOrUpdate from several
// goroutines at once (ScaleSpec's workers) are each tracked before they
// are applied and remembered once; other objects are not.
func TestInMemoryProxyRecordsEveryCluster(t *testing.T) {
	stub, tracker := &applyStub{}, &trackStub{}
	p := newInMemoryProxy(CommonInput{BootstrapClusterProxy: stub, Tracker: tracker})
	doc := func(name string) []byte {
		return fmt.Appendf(nil, "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: %s\n  namespace: ns\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-a-cluster\n  namespace: ns\n", name)
	}
	if err := p.Create(t.Context(), doc("a")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := p.CreateOrUpdate(t.Context(), doc(fmt.Sprintf("s-%02d", i%10))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := p.created()
	slices.Sort(got)
	want := []string{"a", "s-00", "s-01", "s-02", "s-03", "s-04", "s-05", "s-06", "s-07", "s-08", "s-09"}
	if !slices.Equal(got, want) {
		t.Errorf("remembered %v, want %v", got, want)
	}
	if stub.applied != 21 || len(tracker.tracked) != 21 {
		t.Errorf("applied %d, tracked %d; want 21 each", stub.applied, len(tracker.tracked))
	}
	if err := p.Create(t.Context(), []byte("kind: [")); err == nil || stub.applied != 21 {
		t.Errorf("bad YAML: error %v, applied %d: want an error before anything is applied", err, stub.applied)
	}
}
