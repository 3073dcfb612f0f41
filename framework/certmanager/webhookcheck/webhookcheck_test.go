package webhookcheck

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// selfSigned makes a self-signed serving certificate for dnsName, as a
// self-signed cert-manager Issuer would.
func selfSigned(t *testing.T, dnsName string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		DNSNames:     []string{dnsName},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// serve runs a TLS server with cert and returns a Dialer that reaches it
// for any pod.
func serve(t *testing.T, cert tls.Certificate) Dialer {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	return func(ctx context.Context, pod types.NamespacedName, port int32) (net.Conn, error) {
		if pod.Name != "capi-controller-manager-0" || port != 9443 {
			t.Errorf("dialed pod %s port %d, want capi-controller-manager-0 port 9443", pod, port)
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", l.Addr().String())
	}
}

func cluster(t *testing.T, webhookCA, conversionCA []byte) client.Client {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-webhook-service"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
	eps := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-webhook-service-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "capi-webhook-service"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](9443)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "terminating"}},
			{Addresses: []string{"10.0.0.8"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "capi-system", Name: "capi-controller-manager-0"}},
		},
	}
	ref := admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "capi-system", Name: "capi-webhook-service"},
		CABundle: webhookCA,
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "capi-validating-webhook-configuration"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "validation.cluster.cluster.x-k8s.io", ClientConfig: ref}},
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "by-url"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "url.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{
			URL: ptr.To("https://example.com/mutate"),
		}}},
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("clusters.cluster.x-k8s.io")
	crd.Object["spec"] = map[string]any{"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{"clientConfig": map[string]any{
		"service":  map[string]any{"namespace": "capi-system", "name": "capi-webhook-service", "path": "/convert"},
		"caBundle": base64.StdEncoding.EncodeToString(conversionCA),
	}}}}
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(svc, eps, vwc, mwc, crd).Build()
}

func TestCheck(t *testing.T) {
	cert, certPEM := selfSigned(t, "capi-webhook-service.capi-system.svc")
	dial := serve(t, cert)
	if err := Check(context.Background(), Input{Client: cluster(t, certPEM, certPEM), Dial: dial}); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestCheckFindsWrongCA(t *testing.T) {
	cert, certPEM := selfSigned(t, "capi-webhook-service.capi-system.svc")
	_, otherPEM := selfSigned(t, "capi-webhook-service.capi-system.svc")
	dial := serve(t, cert)
	err := Check(context.Background(), Input{Client: cluster(t, certPEM, otherPEM), Dial: dial})
	if err == nil {
		t.Fatal("Check passed with a conversion caBundle that does not verify the serving certificate")
	}
	if msg := err.Error(); !strings.Contains(msg, `CustomResourceDefinition "clusters.cluster.x-k8s.io" conversion webhook`) ||
		!strings.Contains(msg, "certificate") || strings.Contains(msg, "ValidatingWebhookConfiguration") {
		t.Errorf("error %q: want only the CRD's conversion webhook named, with the TLS failure", msg)
	}

	err = Check(context.Background(), Input{Client: cluster(t, nil, certPEM), Dial: dial})
	if err == nil || !strings.Contains(err.Error(), `webhook "validation.cluster.cluster.x-k8s.io": caBundle is empty`) {
		t.Errorf("err = %v, want the empty caBundle named", err)
	}

	// A namespace filter that excludes the provider checks nothing.
	if err := Check(context.Background(), Input{Client: cluster(t, nil, otherPEM), Dial: dial, Namespaces: []string{"capd-system"}}); err != nil {
		t.Errorf("Check with another namespace: %v", err)
	}
}

func TestCheckWrongName(t *testing.T) {
	cert, certPEM := selfSigned(t, "other-service.capi-system.svc")
	err := Check(context.Background(), Input{Client: cluster(t, certPEM, certPEM), Dial: serve(t, cert)})
	if err == nil || !strings.Contains(err.Error(), "capi-webhook-service.capi-system.svc") {
		t.Errorf("err = %v, want a name mismatch for capi-webhook-service.capi-system.svc", err)
	}
}

// TestCheckDialsEachServiceAndCAOnce: webhooks of one Service with one
// caBundle are checked with one connection; a different caBundle is its
// own check.
func TestCheckDialsEachServiceAndCAOnce(t *testing.T) {
	cert, certPEM := selfSigned(t, "capi-webhook-service.capi-system.svc")
	_, otherPEM := selfSigned(t, "capi-webhook-service.capi-system.svc")
	dial := serve(t, cert)
	var mu sync.Mutex
	dials := 0
	counting := func(ctx context.Context, pod types.NamespacedName, port int32) (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return dial(ctx, pod, port)
	}
	if err := Check(context.Background(), Input{Client: cluster(t, certPEM, certPEM), Dial: counting}); err != nil {
		t.Fatal(err)
	}
	if dials != 1 {
		t.Errorf("two webhooks of one Service with one caBundle: %d dials, want 1", dials)
	}
	dials = 0
	if err := Check(context.Background(), Input{Client: cluster(t, certPEM, otherPEM), Dial: counting}); err == nil {
		t.Error("the CRD's wrong caBundle was not reported")
	}
	if dials != 2 {
		t.Errorf("two caBundles: %d dials, want 2", dials)
	}
}
