package certmanager

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Event reasons of the CA injector.
const (
	ReasonInjected            = "Injected"            // caBundle was updated
	ReasonInvalidAnnotation   = "InvalidAnnotation"   // inject-ca-from is not <namespace>/<name>
	ReasonCertificateNotFound = "CertificateNotFound" // inject-ca-from names no Certificate
	ReasonInvalidCA           = "InvalidCA"           // the Secret's ca.crt is not PEM certificates
)

// InjectorReconciler sets the caBundle of objects of one kind
// (ValidatingWebhookConfiguration, MutatingWebhookConfiguration or
// CustomResourceDefinition) annotated AnnotationInjectCAFrom, from the named
// Certificate's Secret's ca.crt.
//
// Targets are cached as metadata only (CRDs are large) and read whole,
// uncached, when one is reconciled; they are written back as unstructured
// objects so that no field unknown to this binary's API types is lost.
type InjectorReconciler struct {
	// Client lists targets' metadata and reads Certificates (cached) and
	// updates targets. Required.
	Client client.Client
	// Reader reads whole targets and Secrets; pass manager.GetAPIReader.
	// If nil, Client.
	Reader client.Reader
	// Recorder records events on targets; if nil, none are.
	Recorder events.EventRecorder
	// GVK is the kind of target: ValidatingWebhookConfigurationGVK,
	// MutatingWebhookConfigurationGVK or CustomResourceDefinitionGVK.
	// Required.
	GVK schema.GroupVersionKind
}

var _ reconcile.Reconciler = (*InjectorReconciler)(nil)

// SetupWithManager registers the reconciler: it watches annotated targets
// of r.GVK, Certificates and the Secrets the CertificateReconciler writes.
func (r *InjectorReconciler) SetupWithManager(mgr ctrl.Manager) error {
	target := &metav1.PartialObjectMetadata{}
	target.SetGroupVersionKind(r.GVK)
	annotated := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetAnnotations()[AnnotationInjectCAFrom]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("cainjector-"+strings.ToLower(r.GVK.Kind)).
		For(target, builder.WithPredicates(annotated)).
		Watches(newObject(CertificateGVK), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.targetsFor(ctx, o.GetNamespace()+"/"+o.GetName())
		})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			name := o.GetAnnotations()[AnnotationCertificateName]
			if name == "" {
				return nil
			}
			return r.targetsFor(ctx, o.GetNamespace()+"/"+name)
		})).
		Complete(r)
}

// targetsFor lists the targets whose annotation is from ("<ns>/<name>").
func (r *InjectorReconciler) targetsFor(ctx context.Context, from string) []reconcile.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(r.GVK.GroupVersion().WithKind(r.GVK.Kind + "List"))
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List injection targets", "kind", r.GVK.Kind)
		return nil
	}
	var reqs []reconcile.Request
	for _, o := range list.Items {
		if strings.TrimSpace(o.Annotations[AnnotationInjectCAFrom]) == from {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: o.Name}})
		}
	}
	return reqs
}

// ParseInjectCAFrom splits an AnnotationInjectCAFrom value into the
// Certificate's namespace and name, or says what is wrong with it.
func ParseInjectCAFrom(value string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(strings.TrimSpace(value), "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%q is not <namespace>/<certificate>", value)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("%q: namespace %q: %s", value, ns, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("%q: name %q: %s", value, name, strings.Join(errs, "; "))
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// Reconcile injects the CA into one target.
func (r *InjectorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	obj := newObject(r.GVK)
	if err := r.reader().Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	value, ok := obj.GetAnnotations()[AnnotationInjectCAFrom]
	if !ok || !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	from, err := ParseInjectCAFrom(value)
	if err != nil {
		err = fmt.Errorf("%s %q: annotation %s: %w", r.GVK.Kind, obj.GetName(), AnnotationInjectCAFrom, err)
		r.event(obj, corev1.EventTypeWarning, ReasonInvalidAnnotation, "%v", err)
		// Retrying cannot help; a new annotation is a new event.
		return reconcile.Result{}, reconcile.TerminalError(err)
	}

	crt := newObject(CertificateGVK)
	if err := r.Client.Get(ctx, from, crt); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("get Certificate %q: %w", from, err)
		}
		// The Certificate watch brings the target back when it appears.
		r.event(obj, corev1.EventTypeWarning, ReasonCertificateNotFound, "Certificate %q named by %s does not exist", from, AnnotationInjectCAFrom)
		return reconcile.Result{}, nil
	}
	secretName, _, _ := unstructured.NestedString(crt.Object, "spec", "secretName")
	secret := &corev1.Secret{}
	secretKey := types.NamespacedName{Namespace: from.Namespace, Name: secretName}
	if secretName != "" {
		err = r.reader().Get(ctx, secretKey, secret)
	}
	switch {
	case secretName == "" || apierrors.IsNotFound(err) || len(secret.Data[KeyCA]) == 0:
		// The Secret watch brings the target back once it is issued.
		log.V(1).Info("Waiting for the Certificate's CA", "certificate", from, "secret", secretName)
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("get Secret %q: %w", secretKey, err)
	}
	ca := secret.Data[KeyCA]
	if _, err := parseCertificates(ca); err != nil {
		r.event(obj, corev1.EventTypeWarning, ReasonInvalidCA, "Secret %q key %s: %v", secretKey, KeyCA, err)
		return reconcile.Result{}, nil
	}

	changed, err := setCABundle(obj, ca)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("%s %q: %w", r.GVK.Kind, obj.GetName(), err))
	}
	if !changed {
		return reconcile.Result{}, nil
	}
	// Update, not patch: the resourceVersion read above makes a concurrent
	// change a conflict (and a retry) instead of a lost write.
	if err := r.Client.Update(ctx, obj); err != nil {
		return reconcile.Result{}, fmt.Errorf("update %s %q: %w", r.GVK.Kind, obj.GetName(), err)
	}
	log.Info("Injected CA", "kind", r.GVK.Kind, "name", obj.GetName(), "certificate", from)
	r.event(obj, corev1.EventTypeNormal, ReasonInjected, "caBundle set from Certificate %q", from)
	return reconcile.Result{}, nil
}

// setCABundle writes ca (PEM) into every caBundle obj has: each webhook's
// clientConfig of a webhook configuration, or a CRD's conversion webhook
// clientConfig. It reports whether anything changed.
func setCABundle(obj *unstructured.Unstructured, ca []byte) (bool, error) {
	encoded := base64.StdEncoding.EncodeToString(ca)
	switch obj.GetKind() {
	case CustomResourceDefinitionGVK.Kind:
		cc, found, err := unstructured.NestedMap(obj.Object, "spec", "conversion", "webhook", "clientConfig")
		if err != nil {
			return false, fmt.Errorf("spec.conversion.webhook.clientConfig: %w", err)
		}
		if !found || cc["caBundle"] == encoded {
			// No conversion webhook: nothing to inject.
			return false, nil
		}
		return true, unstructured.SetNestedField(obj.Object, encoded, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	case ValidatingWebhookConfigurationGVK.Kind, MutatingWebhookConfigurationGVK.Kind:
		webhooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
		if err != nil {
			return false, fmt.Errorf("webhooks: %w", err)
		}
		changed := false
		for i, w := range webhooks {
			wh, ok := w.(map[string]any)
			if !ok {
				return false, fmt.Errorf("webhooks[%d]: not an object", i)
			}
			cc, ok := wh["clientConfig"].(map[string]any)
			if !ok {
				cc = map[string]any{}
				wh["clientConfig"] = cc
			}
			if cc["caBundle"] != encoded {
				cc["caBundle"] = encoded
				changed = true
			}
		}
		if !changed {
			return false, nil
		}
		return true, unstructured.SetNestedSlice(obj.Object, webhooks, "webhooks")
	}
	return false, errors.New("not a webhook configuration or CustomResourceDefinition")
}

func (r *InjectorReconciler) event(obj *unstructured.Unstructured, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, "InjectCA", format, args...)
	}
}

func (r *InjectorReconciler) reader() client.Reader {
	if r.Reader != nil {
		return r.Reader
	}
	return r.Client
}
