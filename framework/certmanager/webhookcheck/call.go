package webhookcheck

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CallInput is the input of CheckCalls.
type CallInput struct {
	// Client sends the dry-run creates, and its RESTMapper maps a
	// webhook's resource to a kind. Required.
	Client client.Client
	// Namespace holds the probes of namespaced kinds. It must exist;
	// nothing is stored in it. If unset, "default".
	Namespace string
	// Namespaces, as Input's, limits the check to the webhook Services in
	// them; if unset, every Service a webhook calls is checked.
	Namespaces []string
}

// ProbeNamePrefix is the generateName of CheckCalls' probe objects.
const ProbeNamePrefix = "capd-e2e-webhook-probe-"

// CheckCalls has the API server call one mutating webhook of each webhook
// Service, the way it calls them for the specs' objects. Check reaches a
// webhook's pod by a port-forward, so it passes as soon as the pod's
// endpoint is ready. The API server, though, dials the Service's cluster
// IP, through rules kube-proxy writes a little later. In that gap the
// first create of a spec failed with "connection refused" and waited for
// its next retry.
//
// The probe is a server-side dry-run create of an object with only a kind
// and a generated name, so nothing is stored. Mutating webhooks run before
// the object is validated, so three answers show the Service was reached:
// a success, an Invalid error from validation, and a denial by a webhook
// of the same Service (validating webhooks run last). An error that the
// API server failed calling a webhook is reported, as is any other error.
// CheckCalls returns the Services it probed (as namespace/name:port), so
// that a caller can tell a pass from a check that found nothing to probe.
//
// Only mutating webhooks can be probed this way. Each probe must call its
// webhook for any object of its kind, with no side effects: no namespace
// or object selector, no match conditions, side effects None or
// NoneOnDryRun, and a rule for CREATE of one resource. A Service with no
// such webhook is not checked; every Cluster API provider defaults its
// objects with one.
func CheckCalls(ctx context.Context, in CallInput) (probed []string, err error) {
	if in.Client == nil {
		return nil, errors.New("check webhook calls: Client is required")
	}
	namespace := in.Namespace
	if namespace == "" {
		namespace = "default"
	}
	cfgs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := in.Client.List(ctx, cfgs); err != nil {
		return nil, fmt.Errorf("list MutatingWebhookConfigurations: %w", err)
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := in.Client.List(ctx, validating); err != nil {
		return nil, fmt.Errorf("list ValidatingWebhookConfigurations: %w", err)
	}
	// The Services of each webhook name (names are unique only within a
	// configuration), to tell whose denial a probe met.
	services := map[string][]string{}
	add := func(name string, cc admissionregistrationv1.WebhookClientConfig) {
		if cc.Service != nil {
			services[name] = append(services[name], serviceKey(cc.Service))
		}
	}
	for _, cfg := range cfgs.Items {
		for _, w := range cfg.Webhooks {
			add(w.Name, w.ClientConfig)
		}
	}
	for _, cfg := range validating.Items {
		for _, w := range cfg.Webhooks {
			add(w.Name, w.ClientConfig)
		}
	}
	var errs []error
	for _, cfg := range cfgs.Items {
		for _, w := range cfg.Webhooks {
			svc := w.ClientConfig.Service
			if svc == nil || (len(in.Namespaces) > 0 && !slices.Contains(in.Namespaces, svc.Namespace)) {
				continue
			}
			key := serviceKey(svc)
			if slices.Contains(probed, key) || !probeable(w) {
				continue
			}
			mapping, ok := createMapping(in.Client.RESTMapper(), w.Rules)
			if !ok {
				continue
			}
			probed = append(probed, key)
			what := fmt.Sprintf("MutatingWebhookConfiguration %q webhook %q (Service %s)", cfg.Name, w.Name, key)
			sameService := func(webhook string) bool { return slices.Contains(services[webhook], key) }
			if err := probe(ctx, in.Client, mapping, namespace, sameService); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
			}
		}
	}
	return probed, errors.Join(errs...)
}

func serviceKey(s *admissionregistrationv1.ServiceReference) string {
	return fmt.Sprintf("%s/%s:%d", s.Namespace, s.Name, servicePort(s))
}

// probeable reports whether the API server calls w for every object of a
// kind it matches, and may do so for a dry run.
func probeable(w admissionregistrationv1.MutatingWebhook) bool {
	if !emptySelector(w.NamespaceSelector) || !emptySelector(w.ObjectSelector) || len(w.MatchConditions) > 0 {
		return false
	}
	return w.SideEffects != nil && (*w.SideEffects == admissionregistrationv1.SideEffectClassNone ||
		*w.SideEffects == admissionregistrationv1.SideEffectClassNoneOnDryRun)
}

func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

// createMapping returns the mapping of the first resource of rules that a
// CREATE matches: a named group, version and resource (no wildcard, no
// subresource) that mapper knows, in the rule's scope.
func createMapping(mapper meta.RESTMapper, rules []admissionregistrationv1.RuleWithOperations) (*meta.RESTMapping, bool) {
	concrete := func(s string) bool { return s != "*" && !strings.Contains(s, "/") }
	for _, r := range rules {
		if !slices.ContainsFunc(r.Operations, func(op admissionregistrationv1.OperationType) bool {
			return op == admissionregistrationv1.Create || op == admissionregistrationv1.OperationAll
		}) {
			continue
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					if !concrete(g) || !concrete(v) || !concrete(res) {
						continue
					}
					gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: g, Version: v, Resource: res})
					if err != nil {
						continue
					}
					m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
					if err != nil || !inScope(r.Scope, m.Scope.Name()) {
						continue
					}
					return m, true
				}
			}
		}
	}
	return nil, false
}

func inScope(scope *admissionregistrationv1.ScopeType, name meta.RESTScopeName) bool {
	switch {
	case scope == nil || *scope == admissionregistrationv1.AllScopes:
		return true
	case *scope == admissionregistrationv1.NamespacedScope:
		return name == meta.RESTScopeNameNamespace
	default:
		return name == meta.RESTScopeNameRoot
	}
}

// deniedBy matches the API server's message for a webhook's denial.
var deniedBy = regexp.MustCompile(`admission webhook "([^"]+)" denied the request`)

// probe dry-run creates an empty object of m's kind and says whether that
// reached the webhook Service (sameService tells a webhook of it by name).
func probe(ctx context.Context, c client.Client, m *meta.RESTMapping, namespace string, sameService func(webhook string) bool) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	u.SetGenerateName(ProbeNamePrefix)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		u.SetNamespace(namespace)
	}
	err := c.Create(ctx, u, client.DryRunAll)
	if err == nil || apierrors.IsInvalid(err) {
		return nil
	}
	if d := deniedBy.FindStringSubmatch(err.Error()); d != nil && sameService(d[1]) {
		return nil
	}
	if strings.Contains(err.Error(), "failed calling webhook") {
		return fmt.Errorf("the API server could not call it: %w", err)
	}
	return fmt.Errorf("dry-run create of a %s: %w", m.GroupVersionKind.Kind, err)
}
