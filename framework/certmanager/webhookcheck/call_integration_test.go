//go:build images

package webhookcheck

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestIntegrationCheckCalls runs CheckCalls against a real API server
// (envtest: kube-apiserver and etcd from $KUBEBUILDER_ASSETS) and a real
// webhook server on this host: it passes while the server answers, and
// names the webhook and the refused connection once the server is gone,
// the failure a spec's first create met when a Service's cluster IP did
// not answer yet.
//
// The API server dials a webhook Service's cluster IP, which nothing
// routes without kube-proxy; with --enable-aggregator-routing it dials the
// address in the Service's EndpointSlice instead, here this host's.
//
// Build tag images (make test-images), for the binaries.
func TestIntegrationCheckCalls(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: no kube-apiserver and etcd binaries for envtest (make test-images extracts them from the built images)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	hostIP := nonLoopbackIPv4(t)
	const svcName, svcNamespace, webhookName = "probe-webhook", "default", "default.configmap.capd-e2e.test"
	cert, certPEM := selfSigned(t, svcName+"."+svcNamespace+".svc")
	l, err := tls.Listen("tcp", net.JoinHostPort(hostIP, "0"), &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	var dryRuns atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		if ptr.Deref(review.Request.DryRun, false) {
			dryRuns.Add(1)
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	env := &envtest.Environment{}
	env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	}()
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	objs := []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: svcNamespace, Name: svcName}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(port)}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: svcNamespace, Name: svcName + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "capd-e2e-probe"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: webhookName,
				ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: certPEM,
					Service: &admissionregistrationv1.ServiceReference{Namespace: svcNamespace, Name: svcName, Path: ptr.To("/mutate")}},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				TimeoutSeconds:          ptr.To[int32](5),
				AdmissionReviewVersions: []string{"v1"},
			}},
		},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}

	// The API server's informers see the new objects a moment later.
	var probed []string
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		probed, err = CheckCalls(ctx, CallInput{Client: c})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("CheckCalls with the webhook server answering: %v", err)
	}
	if want := svcNamespace + "/" + svcName + ":443"; len(probed) != 1 || probed[0] != want {
		t.Errorf("probed %q, want [%s]", probed, want)
	}
	if dryRuns.Load() == 0 {
		t.Error("the webhook server saw no dry-run review")
	}
	cms := &corev1.ConfigMapList{}
	if err := c.List(ctx, cms, client.InNamespace(svcNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, ProbeNamePrefix) {
			t.Errorf("the dry run stored ConfigMap %s", cm.Name)
		}
	}

	// The server goes away: the address refuses connections, as a cluster
	// IP without a proxy rule does.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = CheckCalls(ctx, CallInput{Client: c})
	if err == nil {
		t.Fatal("CheckCalls passed with the webhook server gone")
	}
	for _, want := range []string{`webhook "` + webhookName + `"`, "the API server could not call it", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("with the server gone: %v", err)
}

// nonLoopbackIPv4 returns an IPv4 address of this host outside 127/8: an
// EndpointSlice may not hold a loopback address (ValidateEndpointIP).
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("this host has no IPv4 address outside 127.0.0.0/8 for the webhook server")
	return ""
}
