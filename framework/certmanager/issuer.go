package certmanager

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ReasonIsReady is the reason cert-manager gives a Ready issuer.
const ReasonIsReady = "IsReady"

// IssuerReconciler marks self-signed Issuers (or ClusterIssuers) Ready. A
// self-signed issuer needs nothing to be ready; the condition is for
// whoever looks (kubectl, providers waiting on it). Other issuers are left
// alone.
type IssuerReconciler struct {
	// Client reads issuers and patches their status. Required.
	Client client.Client
	// GVK is IssuerGVK or ClusterIssuerGVK. Required.
	GVK schema.GroupVersionKind
	// Now is the clock; if nil, time.Now.
	Now func() time.Time
}

var _ reconcile.Reconciler = (*IssuerReconciler)(nil)

// SetupWithManager registers the reconciler for r.GVK.
func (r *IssuerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.GVK.Kind).
		For(newObject(r.GVK)).
		Complete(r)
}

// Reconcile sets the Ready condition of one self-signed issuer.
func (r *IssuerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	issuer := newObject(r.GVK)
	if err := r.Client.Get(ctx, req.NamespacedName, issuer); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !isSelfSigned(issuer) || !issuer.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	return reconcile.Result{}, patchStatus(ctx, r.Client, issuer, func() {
		setCondition(issuer, ConditionReady, true, ReasonIsReady, "", now())
	})
}
