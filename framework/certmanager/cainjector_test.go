package certmanager

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func webhookConfig(gvk schema.GroupVersionKind, name, injectFrom string) *unstructured.Unstructured {
	u := newObject(gvk)
	u.SetName(name)
	if injectFrom != "" {
		u.SetAnnotations(map[string]string{AnnotationInjectCAFrom: injectFrom})
	}
	hook := func(n string) map[string]any {
		return map[string]any{
			"name":                    n,
			"admissionReviewVersions": []any{"v1"},
			"sideEffects":             "None",
			"clientConfig": map[string]any{
				"service": map[string]any{"namespace": "capi-system", "name": "capi-webhook-service", "path": "/" + n},
			},
		}
	}
	u.Object["webhooks"] = []any{hook("a.cluster.x-k8s.io"), hook("b.cluster.x-k8s.io")}
	return u
}

func crd(name, injectFrom string, conversion bool) *unstructured.Unstructured {
	u := newObject(CustomResourceDefinitionGVK)
	u.SetName(name)
	if injectFrom != "" {
		u.SetAnnotations(map[string]string{AnnotationInjectCAFrom: injectFrom})
	}
	spec := map[string]any{
		"group": "cluster.x-k8s.io",
		"names": map[string]any{"kind": "Cluster", "plural": "clusters"},
		"scope": "Namespaced",
	}
	if conversion {
		spec["conversion"] = map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig": map[string]any{
					"service": map[string]any{"namespace": "capi-system", "name": "capi-webhook-service", "path": "/convert"},
				},
			},
		}
	}
	u.Object["spec"] = spec
	return u
}

// issuedCA issues the CAPI Certificate into c and returns its ca.crt.
func issuedCA(t *testing.T, c client.Client) []byte {
	t.Helper()
	crt := capiCertificate()
	for _, o := range []client.Object{crt, issuer("Issuer", "capi-system", "capi-selfsigned-issuer", selfSigned())} {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	r, _, _ := newCertReconciler(c)
	if _, err := r.Reconcile(context.Background(), request(crt)); err != nil {
		t.Fatal(err)
	}
	return getSecret(t, c, "capi-system", "capi-webhook-service-cert").Data[KeyCA]
}

func caBundles(t *testing.T, u *unstructured.Unstructured) []string {
	t.Helper()
	if u.GetKind() == CustomResourceDefinitionGVK.Kind {
		v, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		return []string{v}
	}
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	var out []string
	for _, h := range hooks {
		v, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
		out = append(out, v)
	}
	return out
}

func TestInjectCABundle(t *testing.T) {
	const from = "capi-system/capi-serving-cert"
	targets := []*unstructured.Unstructured{
		webhookConfig(ValidatingWebhookConfigurationGVK, "capi-validating-webhook-configuration", from),
		webhookConfig(MutatingWebhookConfigurationGVK, "capi-mutating-webhook-configuration", from),
		crd("clusters.cluster.x-k8s.io", from, true),
	}
	objs := make([]client.Object, len(targets))
	for i, o := range targets {
		objs[i] = o.DeepCopy()
	}
	c := newClient(t, objs...)
	ca := issuedCA(t, c)
	want := base64.StdEncoding.EncodeToString(ca)

	for _, target := range targets {
		t.Run(target.GetKind(), func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			r := &InjectorReconciler{Client: c, Recorder: rec, GVK: target.GroupVersionKind()}

			// The Secret the CertificateReconciler wrote maps to the target.
			reqs := r.targetsFor(context.Background(), from)
			if len(reqs) != 1 || reqs[0] != request(target) {
				t.Fatalf("targetsFor(%q) = %v, want %s", from, reqs, target.GetName())
			}
			if _, err := r.Reconcile(context.Background(), request(target)); err != nil {
				t.Fatal(err)
			}
			got := get(t, c, target)
			for i, b := range caBundles(t, got) {
				if b != want {
					t.Errorf("caBundle %d = %.20q..., want the Certificate's ca.crt", i, b)
				}
			}
			decoded, _ := base64.StdEncoding.DecodeString(caBundles(t, got)[0])
			if !bytes.Equal(decoded, ca) {
				t.Error("caBundle does not decode to ca.crt")
			}
			if evs := drain(rec); !hasEvent(evs, "Normal Injected") {
				t.Errorf("events %q: want Normal Injected", evs)
			}
			// Nothing else was touched.
			if target.GetKind() == CustomResourceDefinitionGVK.Kind {
				if p, _, _ := unstructured.NestedString(got.Object, "spec", "conversion", "webhook", "clientConfig", "service", "path"); p != "/convert" {
					t.Errorf("conversion service path = %q", p)
				}
			}

			// A second pass writes nothing.
			rv := got.GetResourceVersion()
			if _, err := r.Reconcile(context.Background(), request(target)); err != nil {
				t.Fatal(err)
			}
			if get(t, c, target).GetResourceVersion() != rv {
				t.Error("second reconcile updated the object")
			}
		})
	}
}

func TestInjectCRDWithoutConversion(t *testing.T) {
	target := crd("things.example.com", "capi-system/capi-serving-cert", false)
	c := newClient(t, target)
	issuedCA(t, c)
	r := &InjectorReconciler{Client: c, GVK: CustomResourceDefinitionGVK}
	if _, err := r.Reconcile(context.Background(), request(target)); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(get(t, c, target).Object, "spec", "conversion"); found {
		t.Error("a CRD without a conversion webhook got one")
	}
}

func TestInjectBadAnnotation(t *testing.T) {
	for _, value := range []string{"no-slash", "/name", "ns/", "ns/a/b", "Bad_NS/name"} {
		t.Run(value, func(t *testing.T) {
			target := webhookConfig(ValidatingWebhookConfigurationGVK, "v", value)
			c := newClient(t, target)
			rec := events.NewFakeRecorder(10)
			r := &InjectorReconciler{Client: c, Recorder: rec, GVK: ValidatingWebhookConfigurationGVK}
			_, err := r.Reconcile(context.Background(), request(target))
			if err == nil || !errors.Is(err, reconcile.TerminalError(nil)) {
				t.Fatalf("err = %v, want a terminal error", err)
			}
			for _, s := range []string{`ValidatingWebhookConfiguration "v"`, AnnotationInjectCAFrom, value} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if evs := drain(rec); !hasEvent(evs, "Warning InvalidAnnotation") {
				t.Errorf("events %q: want Warning InvalidAnnotation", evs)
			}
		})
	}
}

func TestInjectWaits(t *testing.T) {
	target := webhookConfig(MutatingWebhookConfigurationGVK, "m", "capi-system/capi-serving-cert")

	// No Certificate: a warning, no error (its watch brings us back).
	c := newClient(t, target)
	rec := events.NewFakeRecorder(10)
	r := &InjectorReconciler{Client: c, Recorder: rec, GVK: MutatingWebhookConfigurationGVK}
	if _, err := r.Reconcile(context.Background(), request(target)); err != nil {
		t.Fatal(err)
	}
	if evs := drain(rec); !hasEvent(evs, "Warning CertificateNotFound") {
		t.Errorf("events %q: want Warning CertificateNotFound", evs)
	}

	// A Certificate not issued yet: no caBundle, no error.
	if err := c.Create(context.Background(), capiCertificate()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), request(target)); err != nil {
		t.Fatal(err)
	}
	for _, b := range caBundles(t, get(t, c, target)) {
		if b != "" {
			t.Errorf("caBundle set before the Certificate was issued: %.20q", b)
		}
	}
}

func TestParseInjectCAFrom(t *testing.T) {
	got, err := ParseInjectCAFrom(" capd-system/capd-serving-cert ")
	if err != nil || got.Namespace != "capd-system" || got.Name != "capd-serving-cert" {
		t.Errorf("ParseInjectCAFrom = %v, %v", got, err)
	}
}
