package webhookcheck

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var (
	dockerCluster = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DockerCluster"}
	fleetKind     = schema.GroupVersionKind{Group: "example.x-k8s.io", Version: "v1", Kind: "Fleet"} // cluster-scoped
)

// mutating is a probeable webhook of Service capd-system/capd-webhook-service
// for CREATE and UPDATE of dockerclusters.
func mutating(name string) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: "capd-system", Name: "capd-webhook-service", Path: ptr.To("/mutate")}},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{dockerCluster.Group}, APIVersions: []string{dockerCluster.Version},
				Resources: []string{"dockerclusters"}},
		}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// created is what a probe sent.
type created struct {
	gvk                     schema.GroupVersionKind
	namespace, generateName string
	dryRun                  bool
}

// callCluster returns a client of a cluster with one
// MutatingWebhookConfiguration holding webhooks, whose dry-run creates
// answer with answer and are recorded.
func callCluster(t *testing.T, answer func(obj client.Object) error, webhooks ...admissionregistrationv1.MutatingWebhook) (client.Client, *[]created) {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(dockerCluster, meta.RESTScopeNamespace)
	mapper.Add(fleetKind, meta.RESTScopeRoot)
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "capd-mutating-webhook-configuration"},
		Webhooks:   webhooks,
	}
	// A validating webhook of CAPD's Service, and one of another Service.
	validating := func(name, service string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: "capd-system", Name: service}}}
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "validating"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			validating("validation.dockercluster.infrastructure.cluster.x-k8s.io", "capd-webhook-service"),
			validating("other.example.com", "other-webhook-service"),
		},
	}
	var got []created
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRESTMapper(mapper).WithObjects(mwc, vwc).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			o := &client.CreateOptions{}
			o.ApplyOptions(opts)
			got = append(got, created{obj.GetObjectKind().GroupVersionKind(), obj.GetNamespace(), obj.GetGenerateName(),
				len(o.DryRun) == 1 && o.DryRun[0] == metav1.DryRunAll})
			return answer(obj)
		}}).Build()
	return c, &got
}

func webhookError(msg string) error { return apierrors.NewInternalError(errors.New(msg)) }

// TestCheckCallsAnswers: what the dry-run create answers decides whether
// the webhook was called.
func TestCheckCallsAnswers(t *testing.T) {
	const name = "default.dockercluster.infrastructure.cluster.x-k8s.io"
	invalid := apierrors.NewInvalid(dockerCluster.GroupKind(), "capd-e2e-webhook-probe-x", nil)
	for _, tc := range []struct {
		name    string
		answer  error
		wantErr string // "" for no error
	}{
		{"created", nil, ""},
		{"invalid after the mutating webhooks", invalid, ""},
		{"denied by the webhook", apierrors.NewForbidden(schema.GroupResource{}, "x",
			errors.New(`admission webhook "`+name+`" denied the request: no`)), ""},
		{"cluster IP refused", webhookError(`failed calling webhook "` + name + `": failed to call webhook: Post "https://capd-webhook-service.capd-system.svc:443/mutate?timeout=10s": dial tcp 10.96.64.82:443: connect: connection refused`),
			`MutatingWebhookConfiguration "capd-mutating-webhook-configuration" webhook "` + name + `" (Service capd-system/capd-webhook-service:443): the API server could not call it`},
		{"denied by a validating webhook of the Service", apierrors.NewForbidden(schema.GroupResource{}, "x",
			errors.New(`admission webhook "validation.dockercluster.infrastructure.cluster.x-k8s.io" denied the request: no`)), ""},
		{"denied by another Service's webhook", apierrors.NewForbidden(schema.GroupResource{}, "x",
			errors.New(`admission webhook "other.example.com" denied the request: no`)), "dry-run create of a DockerCluster"},
		{"kind not served", apierrors.NewNotFound(schema.GroupResource{Group: dockerCluster.Group, Resource: "dockerclusters"}, ""),
			"dry-run create of a DockerCluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, got := callCluster(t, func(client.Object) error { return tc.answer }, mutating(name))
			probed, err := CheckCalls(context.Background(), CallInput{Client: c})
			if len(probed) != 1 || probed[0] != "capd-system/capd-webhook-service:443" {
				t.Errorf("probed %q, want capd-system/capd-webhook-service:443", probed)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckCalls: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("CheckCalls = %v, want an error with %q", err, tc.wantErr)
			}
			want := []created{{dockerCluster, "default", ProbeNamePrefix, true}}
			if len(*got) != 1 || (*got)[0] != want[0] {
				t.Errorf("creates %+v, want %+v", *got, want)
			}
		})
	}
}

// TestCheckCallsChoosesProbes: one probe per Service, only through a
// webhook that is called for any object of its kind and allows a dry run.
func TestCheckCallsChoosesProbes(t *testing.T) {
	ok := func(client.Object) error { return nil }
	withSelector := mutating("selector")
	withSelector.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	withNamespaceSelector := mutating("ns-selector")
	withNamespaceSelector.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}}
	withCondition := mutating("condition")
	withCondition.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "true"}}
	sideEffects := mutating("side-effects")
	sideEffects.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
	updateOnly := mutating("update-only")
	updateOnly.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	wildcard := mutating("wildcard")
	wildcard.Rules[0].Resources = []string{"*"}
	subresource := mutating("subresource")
	subresource.Rules[0].Resources = []string{"dockerclusters/status"}
	unknown := mutating("unknown")
	unknown.Rules[0].Resources = []string{"dockermachinepools"}
	wrongScope := mutating("wrong-scope")
	wrongScope.Rules[0].Scope = ptr.To(admissionregistrationv1.ClusterScope)
	byURL := mutating("by-url")
	byURL.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/mutate")}

	c, got := callCluster(t, ok, withSelector, withNamespaceSelector, withCondition, sideEffects, updateOnly,
		wildcard, subresource, unknown, wrongScope, byURL)
	if probed, err := CheckCalls(context.Background(), CallInput{Client: c}); err != nil || len(probed) != 0 {
		t.Fatalf("CheckCalls = %q, %v; want nothing probed, no error", probed, err)
	}
	if len(*got) != 0 {
		t.Errorf("probed %+v through webhooks that cannot be probed", *got)
	}

	// The first probeable webhook of a Service is its probe; another
	// Service, of a cluster-scoped kind, gets its own, without a
	// namespace; a namespace filter leaves it out.
	fleet := mutating("default.fleet.example.x-k8s.io")
	fleet.ClientConfig.Service.Namespace, fleet.ClientConfig.Service.Name = "fleet-system", "fleet-webhook-service"
	fleet.Rules[0].APIGroups, fleet.Rules[0].APIVersions, fleet.Rules[0].Resources = []string{fleetKind.Group}, []string{fleetKind.Version}, []string{"fleets"}
	fleet.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	c, got = callCluster(t, ok, withSelector, mutating("first"), mutating("second"), fleet)
	if _, err := CheckCalls(context.Background(), CallInput{Client: c, Namespace: "probes"}); err != nil {
		t.Fatal(err)
	}
	want := []created{{dockerCluster, "probes", ProbeNamePrefix, true}, {fleetKind, "", ProbeNamePrefix, true}}
	if len(*got) != 2 || (*got)[0] != want[0] || (*got)[1] != want[1] {
		t.Errorf("creates %+v, want %+v", *got, want)
	}
	*got = nil
	if _, err := CheckCalls(context.Background(), CallInput{Client: c, Namespaces: []string{"fleet-system"}}); err != nil {
		t.Fatal(err)
	}
	if len(*got) != 1 || (*got)[0].gvk != fleetKind {
		t.Errorf("with Namespaces fleet-system: creates %+v, want only the Fleet", *got)
	}
}

// TestCheckCallsReportsEveryService: every failing Service is named.
func TestCheckCallsReportsEveryService(t *testing.T) {
	fleet := mutating("default.fleet.example.x-k8s.io")
	fleet.ClientConfig.Service.Name = "fleet-webhook-service"
	fleet.Rules[0].APIGroups, fleet.Rules[0].Resources = []string{fleetKind.Group}, []string{"fleets"}
	fleet.Rules[0].APIVersions = []string{fleetKind.Version}
	c, _ := callCluster(t, func(obj client.Object) error {
		return webhookError(`failed calling webhook "x": connection refused (` + obj.GetObjectKind().GroupVersionKind().Kind + ")")
	}, mutating("default.dockercluster"), fleet)
	_, err := CheckCalls(context.Background(), CallInput{Client: c})
	if err == nil {
		t.Fatal("CheckCalls passed with every call failing")
	}
	for _, want := range []string{"capd-system/capd-webhook-service:443", "capd-system/fleet-webhook-service:443", "(DockerCluster)", "(Fleet)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := CheckCalls(context.Background(), CallInput{}); err == nil {
		t.Error("CheckCalls without a Client passed")
	}
}
