package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func deployment(ns, name string, images ...string) appsv1.Deployment {
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for i, img := range images {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: fmt.Sprint(i), Image: img})
	}
	return d
}

func TestControllers(t *testing.T) {
	got := controllers([]appsv1.Deployment{
		deployment("kube-system", "coredns", "registry.k8s.io/coredns/coredns:v1.12.0"),
		deployment("capd-system", "capd-controller-manager", "gcr.io/k8s-staging-cluster-api/capd-manager:dev"),
		deployment("capi-system", "capi-controller-manager", "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2", "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2"),
		deployment("capd-system", "capd-x", "registry.k8s.io/cluster-api/capd-manager:v1.14.2", "busybox"),
	})
	var s []string
	for _, c := range got {
		s = append(s, c.namespace+"/"+c.name+"="+strings.Join(c.images, ","))
	}
	want := "capd-system/capd-x=registry.k8s.io/cluster-api/capd-manager:v1.14.2 capi-system/capi-controller-manager=registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2"
	if strings.Join(s, " ") != want {
		t.Errorf("controllers:\n got %s\nwant %s", strings.Join(s, " "), want)
	}
}

func TestRolledOut(t *testing.T) {
	d := func(gen, observed int64, replicas, updated, total, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, Replicas: total, AvailableReplicas: available},
		}
	}
	for name, tc := range map[string]struct {
		d    *appsv1.Deployment
		done bool
		why  string
	}{
		"not observed":   {d(2, 1, 1, 1, 1, 1), false, "generation 2 not observed"},
		"not updated":    {d(2, 2, 1, 0, 1, 1), false, "0 of 1 replicas updated"},
		"old pending":    {d(2, 2, 1, 1, 2, 1), false, "1 old replicas pending"},
		"not available":  {d(2, 2, 1, 1, 1, 0), false, "0 of 1 updated replicas available"},
		"rolled out":     {d(2, 2, 1, 1, 1, 1), true, ""},
		"scaled to zero": {d(3, 3, 0, 0, 0, 0), true, ""},
	} {
		done, why := rolledOut(tc.d)
		if done != tc.done || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %v, %q; want %v, %q", name, done, why, tc.done, tc.why)
		}
	}
}

func lease(ns, name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
}

// The old pod is gone and still holds the lease: the lease is deleted, and
// the take-over ends when a new pod holds it (here, the new manager's
// election, played by the test).
func TestTakeOverLeasesDeletesAStaleLease(t *testing.T) {
	cs := fake.NewClientset(lease("capi-system", "controller-leader-election-capi", "capi-old-1_abc"), lease("capi-system", "other", "capi-new-1_def"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		// The new manager leads once the stale lease is gone.
		_ = waitFor(ctx, func() bool {
			_, err := cs.CoordinationV1().Leases("capi-system").Get(ctx, "controller-leader-election-capi", metav1.GetOptions{})
			return err != nil
		})
		_, _ = cs.CoordinationV1().Leases("capi-system").Create(ctx, lease("capi-system", "controller-leader-election-capi", "capi-new-1_xyz"), metav1.CreateOptions{})
	}()
	var said []string
	logf := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if err := takeOverLeases(ctx, cs, "capi-system", map[string]bool{"capi-old-1": true}, logf); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "controller-leader-election-capi: released by the old pod, held by capi-new-1") {
		t.Errorf("said %q", said)
	}
	l, err := cs.CoordinationV1().Leases("capi-system").Get(ctx, "other", metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != "capi-new-1_def" {
		t.Errorf("a lease a new pod held was changed: %v, %v", l, err)
	}
}

// An old pod that does not go away is an error naming it, after the
// deadline.
func TestTakeOverLeasesOldPodStays(t *testing.T) {
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-old-1"}}
	cs := fake.NewClientset(lease("capi-system", "l", "capi-old-1_abc"), old)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := takeOverLeases(ctx, cs, "capi-system", map[string]bool{"capi-old-1": true}, func(string, ...any) {})
	if err == nil || !strings.Contains(err.Error(), "capi-system/capi-old-1 is still there") {
		t.Errorf("got %v, want an error naming the old pod", err)
	}
}

func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
