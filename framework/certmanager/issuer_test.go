package certmanager

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestIssuerReady(t *testing.T) {
	ns := issuer("Issuer", "capi-system", "capi-selfsigned-issuer", selfSigned())
	cluster := issuer("ClusterIssuer", "", "selfsigned", selfSigned())
	ca := issuer("Issuer", "capi-system", "ca", map[string]any{"ca": map[string]any{"secretName": "root"}})
	c := newClient(t, ns, cluster, ca)
	now := func() time.Time { return t0 }
	for _, tc := range []struct {
		r   *IssuerReconciler
		obj *unstructured.Unstructured
	}{
		{&IssuerReconciler{Client: c, GVK: IssuerGVK, Now: now}, ns},
		{&IssuerReconciler{Client: c, GVK: ClusterIssuerGVK, Now: now}, cluster},
	} {
		if _, err := tc.r.Reconcile(context.Background(), request(tc.obj)); err != nil {
			t.Fatalf("%s: %v", tc.obj.GetName(), err)
		}
		got := get(t, c, tc.obj)
		if status, reason, _ := readyCondition(t, got); status != "True" || reason != ReasonIsReady {
			t.Errorf("%s %s: Ready = %s/%s, want True/%s", got.GetKind(), got.GetName(), status, reason, ReasonIsReady)
		}
		// A second pass changes nothing.
		rv := got.GetResourceVersion()
		if _, err := tc.r.Reconcile(context.Background(), request(got)); err != nil {
			t.Fatal(err)
		}
		if get(t, c, got).GetResourceVersion() != rv {
			t.Errorf("%s: second reconcile wrote the status again", got.GetName())
		}
	}

	r := &IssuerReconciler{Client: c, GVK: IssuerGVK, Now: now}
	if _, err := r.Reconcile(context.Background(), request(ca)); err != nil {
		t.Fatal(err)
	}
	if st, ok := get(t, c, ca).Object["status"]; ok {
		t.Errorf("CA issuer's status was written: %v", st)
	}
}
