// Package certmanager is a small stand-in for cert-manager's controllers,
// enough for Cluster API's providers to run their webhooks where no
// cert-manager image can be pulled or built.
//
// It does three things, with controller-runtime:
//
//   - issues Certificates (cert-manager.io/v1) whose issuerRef names a
//     self-signed Issuer or ClusterIssuer — what every Cluster API provider
//     declares — into spec.secretName (type kubernetes.io/tls, keys tls.crt,
//     tls.key and ca.crt, as cert-manager writes them), renews them before
//     they expire and sets their Ready condition;
//   - injects caBundle into ValidatingWebhookConfigurations,
//     MutatingWebhookConfigurations and CustomResourceDefinitions (the
//     conversion webhook) annotated cert-manager.io/inject-ca-from:
//     <namespace>/<certificate>, from that Certificate's Secret's ca.crt;
//   - marks self-signed Issuers and ClusterIssuers Ready.
//
// A self-signed certificate is its own CA, as with cert-manager: ca.crt is
// tls.crt. Go's verifier (the API server's) accepts a leaf that is itself in
// the trust pool, which is how cert-manager's self-signed webhooks work.
//
// cert-manager's API types (github.com/cert-manager/cert-manager/pkg/apis)
// are not imported: their acme package pulls in sigs.k8s.io/gateway-api and
// the root module's requirements would raise shared dependencies of this
// repository (golang.org/x/crypto, kube-openapi, ...) through minimum version
// selection. The few fields used here are read from unstructured objects.
//
// github.com/open-policy-agent/cert-controller was evaluated and not used:
// its CertRotator manages one Secret with a CA it generates, injects into a
// fixed list of objects named up front and runs one cache per rotator, while
// here every Certificate has its own Secret, DNS names and lifetime, and
// injection targets are found by annotation at run time. The crypto it would
// have done is a few calls to crypto/x509 (issue.go).
//
// What this package must not do: act on anything it does not implement.
// Certificates of other issuer kinds (CA, ACME, Vault, external issuers) and
// Issuers that are not self-signed are left untouched, so the substitute
// never fights a real cert-manager over an object. Other cert-manager
// features (CertificateRequests, keystores, inject-ca-from-secret,
// APIService injection) are out of scope.
package certmanager
