package certmanager

import (
	"context"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// t0 is the fixed clock of the tests.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// Only so that the fake client can list CRDs as metadata.
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().
		WithScheme(newScheme(t)).
		WithObjects(objs...).
		WithStatusSubresource(newObject(CertificateGVK), newObject(IssuerGVK), newObject(ClusterIssuerGVK)).
		Build()
}

func certificate(ns, name, issuerKind, issuerName, secretName string, dnsNames ...string) *unstructured.Unstructured {
	u := newObject(CertificateGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	names := make([]any, len(dnsNames))
	for i, n := range dnsNames {
		names[i] = n
	}
	u.Object["spec"] = map[string]any{
		"secretName": secretName,
		"dnsNames":   names,
		"issuerRef":  map[string]any{"kind": issuerKind, "name": issuerName},
		"subject":    map[string]any{"organizations": []any{"k8s-sig-cluster-lifecycle"}},
	}
	return u
}

func issuer(gvkKind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := newObject(IssuerGVK)
	if gvkKind == ClusterIssuerGVK.Kind {
		u = newObject(ClusterIssuerGVK)
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = spec
	return u
}

func selfSigned() map[string]any { return map[string]any{"selfSigned": map[string]any{}} }

func get(t *testing.T, c client.Client, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out := newObject(u.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(u), out); err != nil {
		t.Fatalf("get %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

func getSecret(t *testing.T, c client.Client, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("get Secret %s/%s: %v", ns, name, err)
	}
	return s
}

func request(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}
}

func parseCert(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	certs, err := parseCertificates(pemData)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// drain returns the events recorded so far.
func drain(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(evs []string, prefix string) bool {
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func readyCondition(t *testing.T, u *unstructured.Unstructured) (status, reason, message string) {
	t.Helper()
	status, reason, message, ok := condition(u, ConditionReady)
	if !ok {
		t.Fatalf("%s %s has no Ready condition: %v", u.GetKind(), u.GetName(), u.Object["status"])
	}
	return status, reason, message
}
