package certmanager

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Name is the substitute's name: its event source and field manager.
const Name = "cert-manager-substitute"

// Options configures Setup.
type Options struct {
	// Now is the clock of the reconcilers; if nil, time.Now.
	Now func() time.Time
}

// CacheOptions returns the cache options the manager passed to Setup must
// be created with: they restrict the Secret cache to the Secrets this
// controller writes (LabelSecretManaged), so it does not hold every Secret
// of the cluster in memory. Reconcilers read other Secrets uncached.
func CacheOptions() cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{LabelSecretManaged: "true"})},
		},
	}
}

// ClientOptions returns the client options of the manager passed to Setup:
// Certificates and issuers are read as unstructured objects, which
// controller-runtime's client reads from the API server unless told to use
// the cache (whose informers the controllers start anyway).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}

// Setup registers every reconciler of the substitute with mgr: the
// Certificate issuer, the Issuer and ClusterIssuer readiness and the CA
// injectors for webhook configurations and CRDs. Create mgr with
// CacheOptions and ClientOptions. mgr's scheme needs client-go's core types (corev1); the
// rest is read as unstructured or metadata.
func Setup(mgr ctrl.Manager, opts Options) error {
	recorder := mgr.GetEventRecorder(Name)
	reader := mgr.GetAPIReader()
	if err := (&CertificateReconciler{Client: mgr.GetClient(), Reader: reader, Recorder: recorder, Now: opts.Now}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up Certificate controller: %w", err)
	}
	for _, gvk := range []schema.GroupVersionKind{IssuerGVK, ClusterIssuerGVK} {
		if err := (&IssuerReconciler{Client: mgr.GetClient(), GVK: gvk, Now: opts.Now}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up %s controller: %w", gvk.Kind, err)
		}
	}
	for _, gvk := range []schema.GroupVersionKind{ValidatingWebhookConfigurationGVK, MutatingWebhookConfigurationGVK, CustomResourceDefinitionGVK} {
		if err := (&InjectorReconciler{Client: mgr.GetClient(), Reader: reader, Recorder: recorder, GVK: gvk}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up CA injector for %s: %w", gvk.Kind, err)
		}
	}
	return nil
}
