package certmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reasons of the Certificate Ready condition and of events.
const (
	ReasonReady   = "Ready"   // issued and not due for renewal
	ReasonPending = "Pending" // the issuer does not exist (yet)
	ReasonInvalid = "Invalid" // the spec cannot be issued
	ReasonFailed  = "Failed"  // issuing or writing the Secret failed
	ReasonIssued  = "Issued"  // event: a certificate was (re)issued
	ReasonIgnored = "Ignored" // event: not a self-signed issuer
)

// CertificateReconciler issues the Certificates whose issuerRef names a
// self-signed Issuer or ClusterIssuer, renews them before they expire and
// sets their Ready condition.
type CertificateReconciler struct {
	// Client reads Certificates and issuers and writes Secrets and
	// Certificate status. Required.
	Client client.Client
	// Reader reads Secrets. The manager's cache holds only the Secrets
	// labelled LabelSecretManaged, so pass an uncached reader
	// (manager.GetAPIReader) to find one written by someone else; if nil,
	// Client.
	Reader client.Reader
	// Recorder records events on Certificates; if nil, none are.
	Recorder events.EventRecorder
	// Now is the clock; if nil, time.Now.
	Now func() time.Time
}

var _ reconcile.Reconciler = (*CertificateReconciler)(nil)

// SetupWithManager registers the reconciler: it watches Certificates,
// Issuers, ClusterIssuers and the Secrets it wrote.
func (r *CertificateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("certificate").
		For(newObject(CertificateGVK)).
		Watches(newObject(IssuerGVK), handler.EnqueueRequestsFromMapFunc(r.certificatesForIssuer)).
		Watches(newObject(ClusterIssuerGVK), handler.EnqueueRequestsFromMapFunc(r.certificatesForIssuer)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(certificateForSecret)).
		Complete(r)
}

// issuerRef is a Certificate's spec.issuerRef, defaulted.
type issuerRef struct{ Name, Kind, Group string }

func issuerRefOf(crt *unstructured.Unstructured) issuerRef {
	ref := issuerRef{Kind: IssuerGVK.Kind, Group: Group}
	if v, _, _ := unstructured.NestedString(crt.Object, "spec", "issuerRef", "name"); v != "" {
		ref.Name = v
	}
	if v, _, _ := unstructured.NestedString(crt.Object, "spec", "issuerRef", "kind"); v != "" {
		ref.Kind = v
	}
	if v, _, _ := unstructured.NestedString(crt.Object, "spec", "issuerRef", "group"); v != "" {
		ref.Group = v
	}
	return ref
}

// isSelfSigned reports whether an Issuer or ClusterIssuer has spec.selfSigned.
func isSelfSigned(issuer *unstructured.Unstructured) bool {
	_, found, _ := unstructured.NestedFieldNoCopy(issuer.Object, "spec", "selfSigned")
	return found
}

// Reconcile issues or renews one Certificate.
func (r *CertificateReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	crt := newObject(CertificateGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, crt); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !crt.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	now := r.now()

	ref := issuerRefOf(crt)
	if ref.Group != Group || (ref.Kind != IssuerGVK.Kind && ref.Kind != ClusterIssuerGVK.Kind) {
		log.V(1).Info("Ignoring Certificate of an external issuer", "issuer", ref)
		return reconcile.Result{}, nil
	}
	issuer := newObject(IssuerGVK)
	key := types.NamespacedName{Namespace: crt.GetNamespace(), Name: ref.Name}
	if ref.Kind == ClusterIssuerGVK.Kind {
		issuer = newObject(ClusterIssuerGVK)
		key.Namespace = ""
	}
	if err := r.Client.Get(ctx, key, issuer); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("get %s %q: %w", ref.Kind, key, err)
		}
		// The issuer watch brings the Certificate back when it appears.
		return reconcile.Result{}, r.patchStatus(ctx, crt, func() {
			setCondition(crt, ConditionReady, false, ReasonPending, fmt.Sprintf("%s %q does not exist", ref.Kind, ref.Name), now)
		})
	}
	if !isSelfSigned(issuer) {
		log.V(1).Info("Ignoring Certificate of an issuer that is not self-signed", "issuer", ref)
		r.event(crt, corev1.EventTypeNormal, ReasonIgnored, "%s %q is not self-signed; left to another controller", ref.Kind, ref.Name)
		return reconcile.Result{}, nil
	}

	spec, err := parseCertSpec(crt)
	if err != nil {
		// Terminal until the spec changes, which brings the Certificate back.
		msg := fmt.Sprintf("cannot issue: %v", strings.ReplaceAll(err.Error(), "\n", "; "))
		r.event(crt, corev1.EventTypeWarning, ReasonInvalid, "%s", msg)
		return reconcile.Result{}, r.patchStatus(ctx, crt, func() {
			setCondition(crt, ConditionReady, false, ReasonInvalid, msg, now)
		})
	}

	secret := &corev1.Secret{}
	secretKey := types.NamespacedName{Namespace: crt.GetNamespace(), Name: spec.SecretName}
	if err := r.reader().Get(ctx, secretKey, secret); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("get Secret %q: %w", secretKey, err)
		}
		secret = nil
	}
	var data map[string][]byte
	if secret != nil {
		data = secret.Data
	}
	reason, cert := staleReason(spec, data, now)
	if reason == "" && !issuedBy(secret, crt.GetName(), ref) {
		reason = "Secret was not issued for this Certificate and issuer"
	}
	revision, _, _ := unstructured.NestedInt64(crt.Object, "status", "revision")
	if reason != "" {
		certPEM, keyPEM, err := issueSelfSigned(spec, now)
		if err == nil {
			err = r.writeSecret(ctx, crt, ref, spec, secret, certPEM, keyPEM)
		}
		if err != nil {
			r.event(crt, corev1.EventTypeWarning, ReasonFailed, "issue certificate: %v", err)
			perr := r.patchStatus(ctx, crt, func() {
				setCondition(crt, ConditionReady, false, ReasonFailed, err.Error(), now)
			})
			return reconcile.Result{}, errors.Join(fmt.Errorf("issue Certificate %q: %w", req.NamespacedName, err), perr)
		}
		certs, _ := parseCertificates(certPEM)
		cert = certs[0]
		revision++
		log.Info("Issued certificate", "secret", spec.SecretName, "reason", reason, "notAfter", cert.NotAfter)
		r.event(crt, corev1.EventTypeNormal, ReasonIssued, "issued into Secret %q: %s", spec.SecretName, reason)
	}

	renewal := renewalTime(spec, cert.NotBefore, cert.NotAfter)
	err = r.patchStatus(ctx, crt, func() {
		setCondition(crt, ConditionReady, true, ReasonReady, "Certificate is up to date and has not expired", now)
		// SetNestedField fails only where a field on the path is no map;
		// status is one (setCondition made it), and these are its leaves.
		_ = unstructured.SetNestedField(crt.Object, cert.NotBefore.UTC().Format(time.RFC3339), "status", "notBefore")
		_ = unstructured.SetNestedField(crt.Object, cert.NotAfter.UTC().Format(time.RFC3339), "status", "notAfter")
		_ = unstructured.SetNestedField(crt.Object, renewal.UTC().Format(time.RFC3339), "status", "renewalTime")
		if revision > 0 {
			_ = unstructured.SetNestedField(crt.Object, revision, "status", "revision")
		}
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: max(renewal.Sub(now), time.Second)}, nil
}

// issuedBy reports whether secret's annotations say it holds a certificate
// for the Certificate named crtName, from ref.
func issuedBy(secret *corev1.Secret, crtName string, ref issuerRef) bool {
	if secret == nil {
		return false
	}
	a := secret.Annotations
	return a[AnnotationCertificateName] == crtName && a[AnnotationIssuerName] == ref.Name &&
		a[AnnotationIssuerKind] == ref.Kind && a[AnnotationIssuerGroup] == ref.Group
}

// writeSecret creates or updates the Certificate's Secret with a new
// certificate. Keys other than the three it owns are kept; so is the type
// of an existing Secret (it is immutable).
func (r *CertificateReconciler) writeSecret(ctx context.Context, crt *unstructured.Unstructured, ref issuerRef, spec certSpec, secret *corev1.Secret, certPEM, keyPEM []byte) error {
	create := secret == nil
	if create {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: crt.GetNamespace(), Name: spec.SecretName},
			Type:       corev1.SecretTypeTLS,
		}
	}
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	maps.Copy(secret.Labels, spec.TemplateLabels)
	maps.Copy(secret.Annotations, spec.TemplateAnnotations)
	secret.Labels[LabelSecretManaged] = "true"
	maps.Copy(secret.Annotations, map[string]string{
		AnnotationCertificateName: crt.GetName(),
		AnnotationIssuerName:      ref.Name,
		AnnotationIssuerKind:      ref.Kind,
		AnnotationIssuerGroup:     ref.Group,
		AnnotationCommonName:      spec.CommonName,
		AnnotationAltNames:        strings.Join(spec.DNSNames, ","),
		AnnotationIPSANs:          ipStrings(spec.IPAddresses),
	})
	secret.Data[KeyCert] = certPEM
	secret.Data[KeyPrivateKey] = keyPEM
	// Self-signed: the certificate is its own CA, as cert-manager writes it.
	secret.Data[KeyCA] = certPEM

	if create {
		if err := r.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("create Secret %q: %w", client.ObjectKeyFromObject(secret), err)
		}
		return nil
	}
	if err := r.Client.Update(ctx, secret); err != nil {
		return fmt.Errorf("update Secret %q: %w", client.ObjectKeyFromObject(secret), err)
	}
	return nil
}

// patchStatus applies mutate to obj and patches its status if it changed.
func (r *CertificateReconciler) patchStatus(ctx context.Context, obj *unstructured.Unstructured, mutate func()) error {
	return patchStatus(ctx, r.Client, obj, mutate)
}

func patchStatus(ctx context.Context, c client.Client, obj *unstructured.Unstructured, mutate func()) error {
	before := obj.DeepCopy()
	mutate()
	if equality.Semantic.DeepEqual(before.Object["status"], obj.Object["status"]) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch status of %s %q: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

func (r *CertificateReconciler) event(obj *unstructured.Unstructured, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, "Reconcile", format, args...)
	}
}

func (r *CertificateReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *CertificateReconciler) reader() client.Reader {
	if r.Reader != nil {
		return r.Reader
	}
	return r.Client
}

// certificatesForIssuer maps an Issuer or ClusterIssuer to the
// Certificates that reference it.
func (r *CertificateReconciler) certificatesForIssuer(ctx context.Context, issuer client.Object) []reconcile.Request {
	kind := IssuerGVK.Kind
	var opts []client.ListOption
	if issuer.GetNamespace() == "" {
		kind = ClusterIssuerGVK.Kind
	} else {
		opts = append(opts, client.InNamespace(issuer.GetNamespace()))
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(CertificateGVK.GroupVersion().WithKind(CertificateGVK.Kind + "List"))
	if err := r.Client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List Certificates", "issuer", issuer.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		ref := issuerRefOf(&list.Items[i])
		if ref.Group == Group && ref.Kind == kind && ref.Name == issuer.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// certificateForSecret maps a Secret to the Certificate it was issued for.
func certificateForSecret(_ context.Context, secret client.Object) []reconcile.Request {
	name := secret.GetAnnotations()[AnnotationCertificateName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: secret.GetNamespace(), Name: name}}}
}
