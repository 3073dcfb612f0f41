// Package webhookcheck checks from outside a cluster what the API server
// checks on every admission or conversion call: that each webhook's
// caBundle verifies the certificate its Service serves, for the Service's
// DNS name. It is the proof that the cert-manager substitute (or a real
// cert-manager) did its job, with a clearer error than a failed create.
//
// The webhook servers are reached through a Dialer: PortForward goes
// through the API server to the Service's ready pods, so the check needs
// only a kubeconfig. CheckCalls then has the API server itself call the
// webhooks, through their Services. This package must not change anything
// in the cluster: it reads, and CheckCalls' creates are dry runs.
package webhookcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Dialer opens a TCP connection to port of the pod key.
type Dialer func(ctx context.Context, pod types.NamespacedName, port int32) (net.Conn, error)

// Input is the input of Check.
type Input struct {
	// Client reads webhook configurations, CRDs, Services and
	// EndpointSlices. Required.
	Client client.Reader
	// Dial reaches a webhook's pod; PortForward(restConfig) for a real
	// cluster. Required.
	Dial Dialer
	// Namespaces, if set, limits the check to webhooks whose Service is in
	// one of them (e.g. the providers' namespaces); if unset, every
	// webhook with a Service is checked.
	Namespaces []string
}

// target is one caBundle and the Service it must verify.
type target struct {
	what     string // e.g. `ValidatingWebhookConfiguration "x" webhook "y"`
	caBundle []byte
	service  *admissionregistrationv1.ServiceReference
}

// Check verifies every webhook (validating, mutating, CRD conversion) that
// calls a Service, and returns every failure joined, each naming its
// webhook. Webhooks called by URL are skipped: they are not served by a
// pod of the cluster.
func Check(ctx context.Context, in Input) error {
	if in.Client == nil || in.Dial == nil {
		return errors.New("check webhook CA bundles: Client and Dial are required")
	}
	targets, err := listTargets(ctx, in.Client)
	if err != nil {
		return err
	}
	// Webhooks of one Service with the same caBundle (every CRD of a
	// provider converts through its one webhook Service) give the same
	// answer: each such pair is dialled once, and the distinct ones at
	// once, a few at a time, since each dial is a port-forward through
	// the API server.
	var keep []target
	results := map[checkKey]error{}
	var unique []target
	for _, t := range targets {
		if len(in.Namespaces) > 0 && !slices.Contains(in.Namespaces, t.service.Namespace) {
			continue
		}
		keep = append(keep, t)
		if _, seen := results[t.key()]; !seen {
			results[t.key()] = nil
			unique = append(unique, t)
		}
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(maxParallelDials)
	for _, t := range unique {
		g.Go(func() error {
			err := checkOne(ctx, in, t)
			mu.Lock()
			results[t.key()] = err
			mu.Unlock()
			return nil // every webhook's answer is reported, not the first
		})
	}
	_ = g.Wait() // every goroutine returns nil: the answers are in results
	var errs []error
	for _, t := range keep {
		if err := results[t.key()]; err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.what, err))
		}
	}
	return errors.Join(errs...)
}

// maxParallelDials bounds the port-forwards Check has open at once.
const maxParallelDials = 4

// checkKey identifies what a check depends on: the Service, its port and
// the caBundle.
type checkKey struct {
	namespace, name string
	port            int32
	caBundle        string
}

func (t target) key() checkKey {
	return checkKey{t.service.Namespace, t.service.Name, servicePort(t.service), string(t.caBundle)}
}

// servicePort is the port a webhook calls its Service on: 443 unless set.
func servicePort(s *admissionregistrationv1.ServiceReference) int32 {
	if s.Port != nil {
		return *s.Port
	}
	return 443
}

func listTargets(ctx context.Context, c client.Reader) ([]target, error) {
	var out []target
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := c.List(ctx, vwcs); err != nil {
		return nil, fmt.Errorf("list ValidatingWebhookConfigurations: %w", err)
	}
	for _, cfg := range vwcs.Items {
		for _, w := range cfg.Webhooks {
			if w.ClientConfig.Service != nil {
				out = append(out, target{fmt.Sprintf("ValidatingWebhookConfiguration %q webhook %q", cfg.Name, w.Name), w.ClientConfig.CABundle, w.ClientConfig.Service})
			}
		}
	}
	mwcs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := c.List(ctx, mwcs); err != nil {
		return nil, fmt.Errorf("list MutatingWebhookConfigurations: %w", err)
	}
	for _, cfg := range mwcs.Items {
		for _, w := range cfg.Webhooks {
			if w.ClientConfig.Service != nil {
				out = append(out, target{fmt.Sprintf("MutatingWebhookConfiguration %q webhook %q", cfg.Name, w.Name), w.ClientConfig.CABundle, w.ClientConfig.Service})
			}
		}
	}
	// CRDs as unstructured: the caller's scheme need not know apiextensions.
	crds := &unstructured.UnstructuredList{}
	crds.SetAPIVersion("apiextensions.k8s.io/v1")
	crds.SetKind("CustomResourceDefinitionList")
	if err := c.List(ctx, crds); err != nil {
		return nil, fmt.Errorf("list CustomResourceDefinitions: %w", err)
	}
	for _, crd := range crds.Items {
		cc, found, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig")
		svc, ok := cc["service"].(map[string]any)
		if !found || !ok {
			continue
		}
		ref := &admissionregistrationv1.ServiceReference{}
		ref.Namespace, _ = svc["namespace"].(string)
		ref.Name, _ = svc["name"].(string)
		if p, ok := svc["port"].(int64); ok {
			port := int32(p)
			ref.Port = &port
		}
		var ca []byte
		if s, ok := cc["caBundle"].(string); ok && s != "" {
			var err error
			if ca, err = decodeBase64(s); err != nil {
				return nil, fmt.Errorf("CustomResourceDefinition %q: caBundle: %w", crd.GetName(), err)
			}
		}
		out = append(out, target{fmt.Sprintf("CustomResourceDefinition %q conversion webhook", crd.GetName()), ca, ref})
	}
	return out, nil
}

// checkOne dials a ready pod behind t's Service and verifies its serving
// certificate against t's caBundle for the name the API server uses,
// <service>.<namespace>.svc.
func checkOne(ctx context.Context, in Input, t target) error {
	if len(t.caBundle) == 0 {
		return errors.New("caBundle is empty")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.caBundle) {
		return errors.New("caBundle holds no PEM certificate")
	}
	svcKey := types.NamespacedName{Namespace: t.service.Namespace, Name: t.service.Name}
	pod, port, err := backend(ctx, in.Client, svcKey, t.service.Port)
	if err != nil {
		return err
	}
	conn, err := in.Dial(ctx, pod, port)
	if err != nil {
		return fmt.Errorf("dial pod %q port %d of Service %q: %w", pod, port, svcKey, err)
	}
	defer conn.Close()
	serverName := fmt.Sprintf("%s.%s.svc", svcKey.Name, svcKey.Namespace)
	tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline) // on a TCP connection just dialled: cannot fail
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS to Service %q (pod %q) as %s: %w", svcKey, pod, serverName, err)
	}
	return nil
}

// backend finds a ready pod of the Service and the pod port its port
// (default 443, as for webhooks) maps to.
func backend(ctx context.Context, c client.Reader, svcKey types.NamespacedName, port *int32) (types.NamespacedName, int32, error) {
	svc := &corev1.Service{}
	if err := c.Get(ctx, svcKey, svc); err != nil {
		return types.NamespacedName{}, 0, fmt.Errorf("get Service %q: %w", svcKey, err)
	}
	want := int32(443)
	if port != nil {
		want = *port
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == want {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return types.NamespacedName{}, 0, fmt.Errorf("Service %q has no port %d", svcKey, want)
	}
	eps := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, eps, client.InNamespace(svcKey.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svcKey.Name}); err != nil {
		return types.NamespacedName{}, 0, fmt.Errorf("list EndpointSlices of Service %q: %w", svcKey, err)
	}
	for _, s := range eps.Items {
		var podPort *int32
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name != nil && *p.Name == sp.Name || len(s.Ports) == 1) {
				podPort = p.Port
			}
		}
		if podPort == nil {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) {
				continue
			}
			ns := ep.TargetRef.Namespace
			if ns == "" {
				ns = svcKey.Namespace
			}
			return types.NamespacedName{Namespace: ns, Name: ep.TargetRef.Name}, *podPort, nil
		}
	}
	return types.NamespacedName{}, 0, fmt.Errorf("Service %q has no ready pod for port %d", svcKey, want)
}

// PortForward returns a Dialer that port-forwards through the API server
// of cfg (like kubectl port-forward) for each connection.
func PortForward(cfg *rest.Config) Dialer {
	return func(ctx context.Context, pod types.NamespacedName, port int32) (net.Conn, error) {
		rt, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(cfg.Host)
		if err != nil {
			return nil, fmt.Errorf("API server URL %q: %w", cfg.Host, err)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/portforward", pod.Namespace, pod.Name)
		dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
		stop, ready := make(chan struct{}), make(chan struct{})
		fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(int(port))}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			return nil, err
		}
		done := make(chan error, 1)
		go func() { done <- fw.ForwardPorts() }()
		var once sync.Once
		stopFw := func() { once.Do(func() { close(stop) }) }
		select {
		case <-ready:
		case err := <-done:
			return nil, fmt.Errorf("port-forward: %w", err)
		case <-ctx.Done():
			stopFw()
			return nil, ctx.Err()
		}
		ports, err := fw.GetPorts()
		if err != nil || len(ports) == 0 {
			stopFw()
			return nil, fmt.Errorf("port-forward: no local port: %v", err)
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
		if err != nil {
			stopFw()
			return nil, err
		}
		return &stopConn{Conn: conn, stop: stopFw}, nil
	}
}

// stopConn ends its port-forward when closed.
type stopConn struct {
	net.Conn
	stop func()
}

func (c *stopConn) Close() error {
	err := c.Conn.Close()
	c.stop()
	return err
}

func decodeBase64(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(s)
}
