package specs

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// installRecorder is a CloudControllerManager that reports the UID of the
// Cluster it is installed for, and fails its first install when told to.
type installRecorder struct {
	installs chan types.UID
	failOnce bool
}

func (r *installRecorder) Install(ctx context.Context, c client.Client, namespace, cluster string) error {
	if r.failOnce {
		r.failOnce = false
		return errors.New("the API server is busy")
	}
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, cl); err != nil {
		return err
	}
	r.installs <- cl.UID
	return nil
}

func (r *installRecorder) Uninstall(context.Context, string) ([]string, error) { return nil, nil }

// The manager is installed once per Cluster of the name, again for a
// Cluster created anew, never for another name, and a failed install is
// retried.
func TestInstallForEachCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clusterv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cluster := func(name, uid string) *clusterv1.Cluster {
		return &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cluster("other", "uid-other")).Build()
	rec := &installRecorder{installs: make(chan types.UID, 10), failOnce: true}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		installForEachCluster(ctx, rec, c, "ns", "wl", 5*time.Millisecond)
	}()
	defer func() { cancel(); <-done }()

	next := func() types.UID {
		t.Helper()
		select {
		case uid := <-rec.installs:
			return uid
		case <-time.After(10 * time.Second):
			t.Fatal("no install within 10s")
			return ""
		}
	}
	if err := c.Create(ctx, cluster("wl", "uid-1")); err != nil {
		t.Fatal(err)
	}
	if uid := next(); uid != "uid-1" {
		t.Fatalf("installed for %q, want uid-1", uid)
	}
	if err := c.Delete(ctx, cluster("wl", "uid-1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, cluster("wl", "uid-2")); err != nil {
		t.Fatal(err)
	}
	if uid := next(); uid != "uid-2" {
		t.Fatalf("installed for %q, want uid-2", uid)
	}
	cancel()
	<-done
	close(rec.installs)
	for uid := range rec.installs {
		t.Errorf("installed again, for %q", uid)
	}
}
