package certmanager

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is cert-manager's API group.
const Group = "cert-manager.io"

// Kinds and objects this package reads or writes.
var (
	// CertificateGVK is cert-manager's Certificate.
	CertificateGVK = schema.GroupVersionKind{Group: Group, Version: "v1", Kind: "Certificate"}
	// IssuerGVK is cert-manager's namespaced Issuer.
	IssuerGVK = schema.GroupVersionKind{Group: Group, Version: "v1", Kind: "Issuer"}
	// ClusterIssuerGVK is cert-manager's cluster-scoped ClusterIssuer.
	ClusterIssuerGVK = schema.GroupVersionKind{Group: Group, Version: "v1", Kind: "ClusterIssuer"}

	// ValidatingWebhookConfigurationGVK is an injection target.
	ValidatingWebhookConfigurationGVK = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}
	// MutatingWebhookConfigurationGVK is an injection target.
	MutatingWebhookConfigurationGVK = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"}
	// CustomResourceDefinitionGVK is an injection target (its conversion
	// webhook).
	CustomResourceDefinitionGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// Annotations and labels, with cert-manager's names so that objects written
// here look the same to a real cert-manager installed later.
const (
	// AnnotationInjectCAFrom on an injection target names the Certificate,
	// as "<namespace>/<name>", whose CA goes into its caBundle.
	AnnotationInjectCAFrom = "cert-manager.io/inject-ca-from"
	// AnnotationCertificateName on a Secret names the Certificate (in the
	// Secret's namespace) it was issued for.
	AnnotationCertificateName = "cert-manager.io/certificate-name"
	// AnnotationIssuerName, AnnotationIssuerKind and AnnotationIssuerGroup
	// on a Secret record the issuer it was issued by; a change of issuer
	// reissues.
	AnnotationIssuerName  = "cert-manager.io/issuer-name"
	AnnotationIssuerKind  = "cert-manager.io/issuer-kind"
	AnnotationIssuerGroup = "cert-manager.io/issuer-group"
	// AnnotationCommonName, AnnotationAltNames and AnnotationIPSANs on a
	// Secret describe the certificate in it, for humans.
	AnnotationCommonName = "cert-manager.io/common-name"
	AnnotationAltNames   = "cert-manager.io/alt-names"
	AnnotationIPSANs     = "cert-manager.io/ip-sans"

	// LabelSecretManaged marks the Secrets this controller writes; only
	// those are watched (see CacheOptions), so it does not cache every
	// Secret in the cluster.
	LabelSecretManaged = "controller.cert-manager.io/fao"
)

// Keys of the Secret a Certificate is issued into.
const (
	// KeyCA is the PEM CA certificate(s) that verify KeyCert.
	KeyCA = "ca.crt"
	// KeyCert is the PEM certificate.
	KeyCert = "tls.crt"
	// KeyPrivateKey is the PEM private key.
	KeyPrivateKey = "tls.key"
)

// ConditionReady is the condition type set on Certificates and Issuers.
const ConditionReady = "Ready"

// newObject returns an empty unstructured object of kind gvk.
func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
