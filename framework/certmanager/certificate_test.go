package certmanager

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Certificate every Cluster API provider declares, after kustomize.
func capiCertificate() *unstructured.Unstructured {
	return certificate("capi-system", "capi-serving-cert", "Issuer", "capi-selfsigned-issuer", "capi-webhook-service-cert",
		"capi-webhook-service.capi-system.svc", "capi-webhook-service.capi-system.svc.cluster.local")
}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newCertReconciler(c client.Client) (*CertificateReconciler, *events.FakeRecorder, *clock) {
	rec := events.NewFakeRecorder(100)
	clk := &clock{now: t0}
	return &CertificateReconciler{Client: c, Recorder: rec, Now: clk.Now}, rec, clk
}

func TestCertificateIssued(t *testing.T) {
	crt := capiCertificate()
	c := newClient(t, crt, issuer("Issuer", "capi-system", "capi-selfsigned-issuer", selfSigned()))
	r, rec, _ := newCertReconciler(c)

	res, err := r.Reconcile(context.Background(), request(crt))
	if err != nil {
		t.Fatal(err)
	}
	secret := getSecret(t, c, "capi-system", "capi-webhook-service-cert")
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type = %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	for _, k := range []string{KeyCert, KeyPrivateKey, KeyCA} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("Secret has no %s", k)
		}
	}
	if secret.Labels[LabelSecretManaged] != "true" || secret.Annotations[AnnotationCertificateName] != "capi-serving-cert" {
		t.Errorf("Secret labels %v annotations %v: want the managed label and the certificate name", secret.Labels, secret.Annotations)
	}
	cert := parseCert(t, secret.Data[KeyCert])
	wantDNS := []string{"capi-webhook-service.capi-system.svc", "capi-webhook-service.capi-system.svc.cluster.local"}
	if !slices.Equal(cert.DNSNames, wantDNS) {
		t.Errorf("DNSNames = %v, want %v", cert.DNSNames, wantDNS)
	}
	if !slices.Equal(cert.Subject.Organization, []string{"k8s-sig-cluster-lifecycle"}) {
		t.Errorf("Organization = %v", cert.Subject.Organization)
	}
	if cert.PublicKeyAlgorithm != x509.RSA || !cert.NotBefore.Equal(t0) || !cert.NotAfter.Equal(t0.Add(90*24*time.Hour)) {
		t.Errorf("key %v, valid %s to %s: want RSA, 90 days from %s", cert.PublicKeyAlgorithm, cert.NotBefore, cert.NotAfter, t0)
	}
	key, err := parsePrivateKey(secret.Data[KeyPrivateKey])
	if err != nil {
		t.Fatal(err)
	}
	if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(cert.PublicKey) {
		t.Error("tls.key does not match tls.crt")
	}
	// What the API server does with the injected caBundle: verify the
	// serving certificate for the Service's DNS name.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data[KeyCA]) {
		t.Fatal("ca.crt holds no certificate")
	}
	for _, name := range wantDNS {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: t0.Add(time.Hour)}); err != nil {
			t.Errorf("verify tls.crt with ca.crt for %s: %v", name, err)
		}
	}

	got := get(t, c, crt)
	if status, reason, _ := readyCondition(t, got); status != "True" || reason != ReasonReady {
		t.Errorf("Ready = %s/%s, want True/%s", status, reason, ReasonReady)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "status", "notAfter"); v != t0.Add(90*24*time.Hour).Format(time.RFC3339) {
		t.Errorf("status.notAfter = %q", v)
	}
	if v, _, _ := unstructured.NestedInt64(got.Object, "status", "revision"); v != 1 {
		t.Errorf("status.revision = %d, want 1", v)
	}
	// Renewal at two thirds of the lifetime, cert-manager's default.
	if want := 60 * 24 * time.Hour; res.RequeueAfter != want {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, want)
	}
	if evs := drain(rec); !hasEvent(evs, "Normal Issued") {
		t.Errorf("events %q: want Normal Issued", evs)
	}
}

func TestCertificateOptions(t *testing.T) {
	crt := certificate("ns", "c", "ClusterIssuer", "selfsigned", "s", "a.example")
	spec := crt.Object["spec"].(map[string]any)
	spec["commonName"] = "a.example"
	spec["ipAddresses"] = []any{"10.0.0.1"}
	spec["duration"] = "24h"
	spec["renewBefore"] = "1h"
	spec["usages"] = []any{"server auth", "client auth", "digital signature"}
	spec["privateKey"] = map[string]any{"algorithm": "ECDSA", "size": int64(384), "encoding": "PKCS8"}
	spec["secretTemplate"] = map[string]any{"labels": map[string]any{"team": "capi"}}
	c := newClient(t, crt, issuer("ClusterIssuer", "", "selfsigned", selfSigned()))
	r, _, _ := newCertReconciler(c)
	res, err := r.Reconcile(context.Background(), request(crt))
	if err != nil {
		t.Fatal(err)
	}
	secret := getSecret(t, c, "ns", "s")
	cert := parseCert(t, secret.Data[KeyCert])
	if cert.PublicKeyAlgorithm != x509.ECDSA || cert.Subject.CommonName != "a.example" ||
		len(cert.IPAddresses) != 1 || cert.IPAddresses[0].String() != "10.0.0.1" ||
		!slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("certificate %v CN %q IPs %v EKU %v: does not follow the spec", cert.PublicKeyAlgorithm, cert.Subject.CommonName, cert.IPAddresses, cert.ExtKeyUsage)
	}
	if !bytes.HasPrefix(secret.Data[KeyPrivateKey], []byte("-----BEGIN PRIVATE KEY-----")) {
		t.Errorf("key is not PKCS#8: %.40s", secret.Data[KeyPrivateKey])
	}
	if secret.Labels["team"] != "capi" {
		t.Errorf("secretTemplate label missing: %v", secret.Labels)
	}
	if want := 23 * time.Hour; res.RequeueAfter != want {
		t.Errorf("RequeueAfter = %s, want %s (renewBefore 1h of 24h)", res.RequeueAfter, want)
	}
}

func TestCertificateKeptWhileFresh(t *testing.T) {
	crt := capiCertificate()
	c := newClient(t, crt, issuer("Issuer", "capi-system", "capi-selfsigned-issuer", selfSigned()))
	r, rec, clk := newCertReconciler(c)
	if _, err := r.Reconcile(context.Background(), request(crt)); err != nil {
		t.Fatal(err)
	}
	before := getSecret(t, c, "capi-system", "capi-webhook-service-cert")
	drain(rec)

	clk.now = t0.Add(59 * 24 * time.Hour) // a day before renewal
	res, err := r.Reconcile(context.Background(), request(crt))
	if err != nil {
		t.Fatal(err)
	}
	after := getSecret(t, c, "capi-system", "capi-webhook-service-cert")
	if after.ResourceVersion != before.ResourceVersion {
		t.Error("Secret was rewritten while its certificate was fresh")
	}
	if res.RequeueAfter != 24*time.Hour {
		t.Errorf("RequeueAfter = %s, want 24h", res.RequeueAfter)
	}
	if evs := drain(rec); len(evs) != 0 {
		t.Errorf("events %q: want none", evs)
	}
}

func TestCertificateRenewedNearExpiry(t *testing.T) {
	crt := capiCertificate()
	c := newClient(t, crt, issuer("Issuer", "capi-system", "capi-selfsigned-issuer", selfSigned()))
	r, rec, clk := newCertReconciler(c)
	if _, err := r.Reconcile(context.Background(), request(crt)); err != nil {
		t.Fatal(err)
	}
	old := parseCert(t, getSecret(t, c, "capi-system", "capi-webhook-service-cert").Data[KeyCert])
	drain(rec)

	clk.now = t0.Add(61 * 24 * time.Hour) // past the renewal time, before expiry
	res, err := r.Reconcile(context.Background(), request(crt))
	if err != nil {
		t.Fatal(err)
	}
	secret := getSecret(t, c, "capi-system", "capi-webhook-service-cert")
	renewed := parseCert(t, secret.Data[KeyCert])
	if renewed.SerialNumber.Cmp(old.SerialNumber) == 0 || !renewed.NotBefore.Equal(clk.now) {
		t.Errorf("certificate not renewed: serial %v -> %v, notBefore %s", old.SerialNumber, renewed.SerialNumber, renewed.NotBefore)
	}
	if !bytes.Equal(secret.Data[KeyCA], secret.Data[KeyCert]) {
		t.Error("ca.crt is not the renewed certificate")
	}
	if res.RequeueAfter != 60*24*time.Hour {
		t.Errorf("RequeueAfter = %s, want 60 days", res.RequeueAfter)
	}
	got := get(t, c, crt)
	if v, _, _ := unstructured.NestedInt64(got.Object, "status", "revision"); v != 2 {
		t.Errorf("status.revision = %d, want 2", v)
	}
	if evs := drain(rec); !hasEvent(evs, "Normal Issued") || !strings.Contains(strings.Join(evs, "\n"), "due for renewal") {
		t.Errorf("events %q: want Issued, due for renewal", evs)
	}
}

func TestCertificateReissued(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, c client.Client, crt *unstructured.Unstructured){
		"dnsNames changed": func(t *testing.T, c client.Client, crt *unstructured.Unstructured) {
			u := get(t, c, crt)
			_ = unstructured.SetNestedStringSlice(u.Object, []string{"other.capi-system.svc"}, "spec", "dnsNames")
			if err := c.Update(context.Background(), u); err != nil {
				t.Fatal(err)
			}
		},
		"Secret deleted": func(t *testing.T, c client.Client, _ *unstructured.Unstructured) {
			s := &corev1.Secret{}
			s.Namespace, s.Name = "capi-system", "capi-webhook-service-cert"
			if err := c.Delete(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		},
		"key replaced": func(t *testing.T, c client.Client, _ *unstructured.Unstructured) {
			s := getSecret(t, c, "capi-system", "capi-webhook-service-cert")
			s.Data[KeyPrivateKey] = []byte("garbage")
			if err := c.Update(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			crt := capiCertificate()
			c := newClient(t, crt, issuer("Issuer", "capi-system", "capi-selfsigned-issuer", selfSigned()))
			r, _, _ := newCertReconciler(c)
			if _, err := r.Reconcile(context.Background(), request(crt)); err != nil {
				t.Fatal(err)
			}
			old := parseCert(t, getSecret(t, c, "capi-system", "capi-webhook-service-cert").Data[KeyCert])
			change(t, c, crt)
			if _, err := r.Reconcile(context.Background(), request(crt)); err != nil {
				t.Fatal(err)
			}
			secret := getSecret(t, c, "capi-system", "capi-webhook-service-cert")
			cert := parseCert(t, secret.Data[KeyCert])
			if cert.SerialNumber.Cmp(old.SerialNumber) == 0 {
				t.Error("not reissued")
			}
			spec, err := parseCertSpec(get(t, c, crt))
			if err != nil {
				t.Fatal(err)
			}
			if reason, _ := staleReason(spec, secret.Data, t0); reason != "" {
				t.Errorf("reissued Secret is stale: %s", reason)
			}
		})
	}
}

func TestCertificateOfOtherIssuersIgnored(t *testing.T) {
	for name, tc := range map[string]struct {
		crt    *unstructured.Unstructured
		issuer *unstructured.Unstructured
		event  string
	}{
		"CA issuer": {
			crt:    certificate("ns", "c", "Issuer", "ca", "s", "a.ns.svc"),
			issuer: issuer("Issuer", "ns", "ca", map[string]any{"ca": map[string]any{"secretName": "root"}}),
			event:  "Normal Ignored",
		},
		"ACME ClusterIssuer": {
			crt:    certificate("ns", "c", "ClusterIssuer", "letsencrypt", "s", "a.example"),
			issuer: issuer("ClusterIssuer", "", "letsencrypt", map[string]any{"acme": map[string]any{"server": "https://acme.example"}}),
			event:  "Normal Ignored",
		},
		"external issuer group": {
			crt: func() *unstructured.Unstructured {
				u := certificate("ns", "c", "AWSPCAIssuer", "pca", "s", "a.example")
				_ = unstructured.SetNestedField(u.Object, "awspca.cert-manager.io", "spec", "issuerRef", "group")
				return u
			}(),
			issuer: issuer("Issuer", "ns", "unrelated", selfSigned()),
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, tc.crt, tc.issuer)
			r, rec, _ := newCertReconciler(c)
			if _, err := r.Reconcile(context.Background(), request(tc.crt)); err != nil {
				t.Fatal(err)
			}
			err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "s"}, &corev1.Secret{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("Secret: got %v, want NotFound", err)
			}
			if st, ok := get(t, c, tc.crt).Object["status"]; ok {
				t.Errorf("status was written: %v", st)
			}
			evs := drain(rec)
			if tc.event != "" && !hasEvent(evs, tc.event) || tc.event == "" && len(evs) != 0 {
				t.Errorf("events %q, want %q", evs, tc.event)
			}
		})
	}
}

func TestCertificateIssuerMissing(t *testing.T) {
	crt := capiCertificate()
	c := newClient(t, crt)
	r, _, _ := newCertReconciler(c)
	if _, err := r.Reconcile(context.Background(), request(crt)); err != nil {
		t.Fatal(err)
	}
	status, reason, msg := readyCondition(t, get(t, c, crt))
	if status != "False" || reason != ReasonPending || !strings.Contains(msg, "capi-selfsigned-issuer") {
		t.Errorf("Ready = %s/%s %q, want False/%s naming the issuer", status, reason, msg, ReasonPending)
	}
	// The issuer appears: its watch maps it to the Certificate.
	iss := issuer("Issuer", "capi-system", "capi-selfsigned-issuer", selfSigned())
	if err := c.Create(context.Background(), iss); err != nil {
		t.Fatal(err)
	}
	reqs := r.certificatesForIssuer(context.Background(), iss)
	if len(reqs) != 1 || reqs[0] != request(crt) {
		t.Fatalf("certificatesForIssuer = %v, want the Certificate", reqs)
	}
	if _, err := r.Reconcile(context.Background(), reqs[0]); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := readyCondition(t, get(t, c, crt)); status != "True" {
		t.Errorf("Ready = %s after the issuer appeared", status)
	}
}

func TestCertificateInvalidSpec(t *testing.T) {
	crt := certificate("ns", "c", "Issuer", "selfsigned", "", "a.ns.svc")
	_ = unstructured.SetNestedField(crt.Object, "RSA", "spec", "privateKey", "algorithm")
	_ = unstructured.SetNestedField(crt.Object, int64(1024), "spec", "privateKey", "size")
	c := newClient(t, crt, issuer("Issuer", "ns", "selfsigned", selfSigned()))
	r, rec, _ := newCertReconciler(c)
	if _, err := r.Reconcile(context.Background(), request(crt)); err != nil {
		t.Fatal(err)
	}
	status, reason, msg := readyCondition(t, get(t, c, crt))
	if status != "False" || reason != ReasonInvalid || !strings.Contains(msg, "spec.secretName") || !strings.Contains(msg, "spec.privateKey.size") {
		t.Errorf("Ready = %s/%s %q, want False/%s naming both bad fields", status, reason, msg, ReasonInvalid)
	}
	if evs := drain(rec); !hasEvent(evs, "Warning Invalid") {
		t.Errorf("events %q: want Warning Invalid", evs)
	}
}

func TestCertificateForSecret(t *testing.T) {
	s := &corev1.Secret{}
	s.Namespace, s.Name = "ns", "s"
	if reqs := certificateForSecret(context.Background(), s); len(reqs) != 0 {
		t.Errorf("unannotated Secret maps to %v", reqs)
	}
	s.Annotations = map[string]string{AnnotationCertificateName: "c"}
	reqs := certificateForSecret(context.Background(), s)
	if len(reqs) != 1 || reqs[0].Namespace != "ns" || reqs[0].Name != "c" {
		t.Errorf("certificateForSecret = %v, want ns/c", reqs)
	}
}
