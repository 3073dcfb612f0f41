//go:build images

package certmanager_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capd-e2e/capd-e2e/framework/certmanager"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/manifests"
	"github.com/capd-e2e/capd-e2e/framework/config"
)

// TestIntegrationEnvtest runs the substitute against a real API server
// (envtest: kube-apiserver and etcd from $KUBEBUILDER_ASSETS): installs
// cert-manager's CRDs and the substitute's manifests with manifests.Install,
// then runs the controller as the substitute's ServiceAccount (so the
// manifests' RBAC is exercised) and checks a provider-like Certificate is
// issued, its Issuer made Ready,
// its CA injected into a webhook configuration and a CRD's conversion
// webhook, and everything redone when the Secret is deleted.
//
// Build tag images (make test-images); fails unless KUBEBUILDER_ASSETS names a directory with kube-apiserver
// and etcd (the images of registry.k8s.io/kube-apiserver and
// registry.k8s.io/etcd that `make images` builds carry both binaries).
func TestIntegrationEnvtest(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; skipped under -short")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: no kube-apiserver and etcd binaries for envtest (make test-images extracts them from the built images)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The controllers' logs go to the test log (shown on failure or -v).
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.Level(-1)})))

	env := &envtest.Environment{}
	restCfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load("../../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Nothing runs the Deployment in envtest: wait for the CRDs only,
	// which Install learns of from a watch.
	if err := manifests.Install(ctx, manifests.InstallInput{Client: c, Config: cfg, Wait: manifests.WaitCRDs, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(certmanager.CustomResourceDefinitionGVK)
		if err := c.Get(ctx, types.NamespacedName{Name: name}, u); err != nil || !established(u) {
			t.Fatalf("Install with WaitCRDs returned, but CRD %s is not Established (%v)", name, err)
		}
	}
	// The Deployment never becomes Available here: the wait says so.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := manifests.WaitAvailable(short, c, time.Minute, time.Second); err == nil || !strings.Contains(err.Error(), "not Available") {
		t.Errorf("WaitAvailable in envtest = %v, want an error saying the Deployment is not Available", err)
	}

	// The manager runs as the substitute's ServiceAccount, so the RBAC of
	// the manifests is what is tested, not envtest's admin rights.
	saCfg := rest.CopyConfig(restCfg)
	saCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + manifests.Namespace + ":cert-manager-substitute"}
	mgr, err := ctrl.NewManager(saCfg, ctrl.Options{
		Scheme:  scheme,
		Cache:   certmanager.CacheOptions(),
		Client:  certmanager.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := certmanager.Setup(mgr, certmanager.Options{}); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() { stopMgr(); <-mgrDone })

	// What a provider's components YAML declares (core CAPI, after kustomize).
	const ns, from = "capi-system", "capi-system/capi-serving-cert"
	create(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(ctx, t, c, object(certmanager.IssuerGVK, ns, "capi-selfsigned-issuer", nil, map[string]any{"selfSigned": map[string]any{}}))
	create(ctx, t, c, object(certmanager.CertificateGVK, ns, "capi-serving-cert", nil, map[string]any{
		"secretName": "capi-webhook-service-cert",
		"dnsNames":   []any{"capi-webhook-service.capi-system.svc", "capi-webhook-service.capi-system.svc.cluster.local"},
		"issuerRef":  map[string]any{"kind": "Issuer", "name": "capi-selfsigned-issuer"},
	}))
	svc := &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "capi-webhook-service", Path: ptr("/validate")}
	none := admissionregistrationv1.SideEffectClassNone
	create(ctx, t, c, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "capi-validating-webhook-configuration", Annotations: map[string]string{certmanager.AnnotationInjectCAFrom: from}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validation.widget.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc},
			AdmissionReviewVersions: []string{"v1"}, SideEffects: &none,
			// Nothing serves it: match nothing, so the API server never calls it.
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}},
		}},
	})
	crd := object(certmanager.CustomResourceDefinitionGVK, "", "widgets.example.com", map[string]string{certmanager.AnnotationInjectCAFrom: from}, map[string]any{
		"group": "example.com",
		"names": map[string]any{"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
		"scope": "Namespaced",
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig":             map[string]any{"service": map[string]any{"namespace": ns, "name": "capi-webhook-service", "path": "/convert"}},
		}},
	})
	create(ctx, t, c, crd)

	secretKey := types.NamespacedName{Namespace: ns, Name: "capi-webhook-service-cert"}
	var ca []byte
	eventually(ctx, t, "Secret issued", func() bool {
		s := &corev1.Secret{}
		if c.Get(ctx, secretKey, s) != nil || s.Type != corev1.SecretTypeTLS || len(s.Data["ca.crt"]) == 0 {
			return false
		}
		ca = s.Data["ca.crt"]
		return true
	})
	injected := func(ca []byte) bool {
		want := base64.StdEncoding.EncodeToString(ca)
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if c.Get(ctx, types.NamespacedName{Name: "capi-validating-webhook-configuration"}, vwc) != nil || !bytes.Equal(vwc.Webhooks[0].ClientConfig.CABundle, ca) {
			return false
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(certmanager.CustomResourceDefinitionGVK)
		if c.Get(ctx, types.NamespacedName{Name: crd.GetName()}, u) != nil {
			return false
		}
		got, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		return got == want
	}
	eventually(ctx, t, "CA injected into the webhook configuration and the CRD", func() bool { return injected(ca) })
	eventually(ctx, t, "Certificate and Issuer Ready", func() bool {
		return ready(ctx, c, certmanager.CertificateGVK, ns, "capi-serving-cert") && ready(ctx, c, certmanager.IssuerGVK, ns, "capi-selfsigned-issuer")
	})

	// Deleting the Secret reissues it, and the new CA is injected.
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretKey.Name}}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "Secret reissued with a new CA, and injected", func() bool {
		s := &corev1.Secret{}
		if c.Get(ctx, secretKey, s) != nil || len(s.Data["ca.crt"]) == 0 || bytes.Equal(s.Data["ca.crt"], ca) {
			return false
		}
		return injected(s.Data["ca.crt"])
	})
}

func ptr[T any](v T) *T { return &v }

// testWriter writes to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func object(gvk schema.GroupVersionKind, ns, name string, annotations map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func create(ctx context.Context, t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(ctx, o); err != nil {
		t.Fatalf("create %T %s: %v", o, o.GetName(), err)
	}
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func ready(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u) != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); ok && m["type"] == certmanager.ConditionReady && m["status"] == "True" {
			return true
		}
	}
	return false
}

// eventually polls cond every 200ms until it holds or ctx ends.
func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for: %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
