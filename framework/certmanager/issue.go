package certmanager

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// cert-manager's defaults (cert-manager.io/v1 Certificate).
const (
	defaultDuration = 90 * 24 * time.Hour
	minDuration     = time.Hour
	defaultRSASize  = 2048
)

// certSpec is the part of a Certificate's spec this package implements.
type certSpec struct {
	SecretName          string
	CommonName          string
	DNSNames            []string
	IPAddresses         []net.IP
	URIs                []*url.URL
	EmailAddresses      []string
	Organizations       []string
	OrganizationalUnits []string
	Duration            time.Duration
	RenewBefore         time.Duration // 0: unset
	RenewBeforePercent  int64         // 0: unset
	IsCA                bool
	KeyUsage            x509.KeyUsage
	ExtKeyUsage         []x509.ExtKeyUsage
	KeyAlgorithm        string // RSA, ECDSA or Ed25519
	KeySize             int
	KeyEncoding         string // PKCS1 or PKCS8
	TemplateLabels      map[string]string
	TemplateAnnotations map[string]string
}

// parseCertSpec reads and defaults a Certificate's spec. Its errors name
// the field.
func parseCertSpec(u *unstructured.Unstructured) (certSpec, error) {
	var s certSpec
	var errs []error
	str := func(path ...string) string {
		v, _, err := unstructured.NestedString(u.Object, path...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", strings.Join(path, "."), err))
		}
		return v
	}
	list := func(path ...string) []string {
		v, _, err := unstructured.NestedStringSlice(u.Object, path...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", strings.Join(path, "."), err))
		}
		return v
	}
	dur := func(path ...string) time.Duration {
		v := str(path...)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive duration", strings.Join(path, "."), v))
		}
		return d
	}

	s.SecretName = str("spec", "secretName")
	if s.SecretName == "" {
		errs = append(errs, errors.New("spec.secretName: required"))
	}
	s.CommonName = str("spec", "commonName")
	s.DNSNames = list("spec", "dnsNames")
	for _, ip := range list("spec", "ipAddresses") {
		parsed := net.ParseIP(ip)
		if parsed == nil {
			errs = append(errs, fmt.Errorf("spec.ipAddresses: %q is not an IP address", ip))
			continue
		}
		s.IPAddresses = append(s.IPAddresses, parsed)
	}
	for _, raw := range list("spec", "uris") {
		parsed, err := url.Parse(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.uris: %q: %w", raw, err))
			continue
		}
		s.URIs = append(s.URIs, parsed)
	}
	s.EmailAddresses = list("spec", "emailAddresses")
	if s.CommonName == "" && len(s.DNSNames)+len(s.IPAddresses)+len(s.URIs)+len(s.EmailAddresses) == 0 {
		errs = append(errs, errors.New("spec: at least one of commonName, dnsNames, ipAddresses, uris or emailAddresses is required"))
	}
	s.Organizations = list("spec", "subject", "organizations")
	s.OrganizationalUnits = list("spec", "subject", "organizationalUnits")

	s.Duration = dur("spec", "duration")
	switch {
	case s.Duration == 0:
		s.Duration = defaultDuration
	case s.Duration < minDuration:
		errs = append(errs, fmt.Errorf("spec.duration: %s is shorter than the minimum %s", s.Duration, minDuration))
	}
	s.RenewBefore = dur("spec", "renewBefore")
	pct, _, err := unstructured.NestedInt64(u.Object, "spec", "renewBeforePercentage")
	if err != nil {
		errs = append(errs, fmt.Errorf("spec.renewBeforePercentage: %w", err))
	} else if pct < 0 || pct >= 100 {
		errs = append(errs, fmt.Errorf("spec.renewBeforePercentage: %d is not in [1, 99]", pct))
	}
	s.RenewBeforePercent = pct

	s.IsCA, _, err = unstructured.NestedBool(u.Object, "spec", "isCA")
	if err != nil {
		errs = append(errs, fmt.Errorf("spec.isCA: %w", err))
	}
	usages := list("spec", "usages")
	if len(usages) == 0 {
		usages = []string{"digital signature", "key encipherment"} // cert-manager's default
	}
	for _, name := range usages {
		if ku, ok := keyUsages[name]; ok {
			s.KeyUsage |= ku
		} else if eku, ok := extKeyUsages[name]; ok {
			s.ExtKeyUsage = append(s.ExtKeyUsage, eku)
		} else {
			errs = append(errs, fmt.Errorf("spec.usages: unknown usage %q", name))
		}
	}
	if s.IsCA {
		s.KeyUsage |= x509.KeyUsageCertSign
	}

	s.KeyAlgorithm = str("spec", "privateKey", "algorithm")
	size, _, err := unstructured.NestedInt64(u.Object, "spec", "privateKey", "size")
	if err != nil {
		errs = append(errs, fmt.Errorf("spec.privateKey.size: %w", err))
	}
	s.KeySize = int(size)
	switch s.KeyAlgorithm {
	case "", "RSA":
		s.KeyAlgorithm = "RSA"
		if s.KeySize == 0 {
			s.KeySize = defaultRSASize
		}
		if s.KeySize < 2048 || s.KeySize > 8192 {
			errs = append(errs, fmt.Errorf("spec.privateKey.size: %d is not in [2048, 8192] for RSA", s.KeySize))
		}
	case "ECDSA":
		if s.KeySize == 0 {
			s.KeySize = 256
		}
		if _, ok := curves[s.KeySize]; !ok {
			errs = append(errs, fmt.Errorf("spec.privateKey.size: %d is not 256, 384 or 521 for ECDSA", s.KeySize))
		}
	case "Ed25519":
	default:
		errs = append(errs, fmt.Errorf("spec.privateKey.algorithm: %q is not RSA, ECDSA or Ed25519", s.KeyAlgorithm))
	}
	s.KeyEncoding = str("spec", "privateKey", "encoding")
	switch s.KeyEncoding {
	case "":
		s.KeyEncoding = "PKCS1"
	case "PKCS1", "PKCS8":
	default:
		errs = append(errs, fmt.Errorf("spec.privateKey.encoding: %q is not PKCS1 or PKCS8", s.KeyEncoding))
	}

	s.TemplateLabels, _, _ = unstructured.NestedStringMap(u.Object, "spec", "secretTemplate", "labels")
	s.TemplateAnnotations, _, _ = unstructured.NestedStringMap(u.Object, "spec", "secretTemplate", "annotations")
	return s, errors.Join(errs...)
}

var keyUsages = map[string]x509.KeyUsage{
	"signing":            x509.KeyUsageDigitalSignature,
	"digital signature":  x509.KeyUsageDigitalSignature,
	"content commitment": x509.KeyUsageContentCommitment,
	"key encipherment":   x509.KeyUsageKeyEncipherment,
	"key agreement":      x509.KeyUsageKeyAgreement,
	"data encipherment":  x509.KeyUsageDataEncipherment,
	"cert sign":          x509.KeyUsageCertSign,
	"crl sign":           x509.KeyUsageCRLSign,
	"encipher only":      x509.KeyUsageEncipherOnly,
	"decipher only":      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[string]x509.ExtKeyUsage{
	"any":              x509.ExtKeyUsageAny,
	"server auth":      x509.ExtKeyUsageServerAuth,
	"client auth":      x509.ExtKeyUsageClientAuth,
	"code signing":     x509.ExtKeyUsageCodeSigning,
	"email protection": x509.ExtKeyUsageEmailProtection,
	"s/mime":           x509.ExtKeyUsageEmailProtection,
	"ipsec end system": x509.ExtKeyUsageIPSECEndSystem,
	"ipsec tunnel":     x509.ExtKeyUsageIPSECTunnel,
	"ipsec user":       x509.ExtKeyUsageIPSECUser,
	"timestamping":     x509.ExtKeyUsageTimeStamping,
	"ocsp signing":     x509.ExtKeyUsageOCSPSigning,
	"microsoft sgc":    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	"netscape sgc":     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

var curves = map[int]elliptic.Curve{256: elliptic.P256(), 384: elliptic.P384(), 521: elliptic.P521()}

// issueSelfSigned makes a new key and a certificate for s signed by that
// key, valid from now for s.Duration. It returns both PEM encoded.
func issueSelfSigned(s certSpec, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := generateKey(s)
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key: %w", s.KeyAlgorithm, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("generate serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:         s.CommonName,
			Organization:       s.Organizations,
			OrganizationalUnit: s.OrganizationalUnits,
		},
		DNSNames:              s.DNSNames,
		IPAddresses:           s.IPAddresses,
		URIs:                  s.URIs,
		EmailAddresses:        s.EmailAddresses,
		NotBefore:             now.UTC().Truncate(time.Second),
		NotAfter:              now.UTC().Truncate(time.Second).Add(s.Duration),
		KeyUsage:              s.KeyUsage,
		ExtKeyUsage:           s.ExtKeyUsage,
		BasicConstraintsValid: true,
		IsCA:                  s.IsCA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate: %w", err)
	}
	keyPEM, err = encodeKey(key, s.KeyEncoding)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func generateKey(s certSpec) (crypto.Signer, error) {
	switch s.KeyAlgorithm {
	case "ECDSA":
		return ecdsa.GenerateKey(curves[s.KeySize], rand.Reader)
	case "Ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	default:
		return rsa.GenerateKey(rand.Reader, s.KeySize)
	}
}

// encodeKey writes key as cert-manager does: PKCS1 means the algorithm's
// own format (PKCS#1 for RSA, SEC 1 for ECDSA; Ed25519 has only PKCS#8).
func encodeKey(key crypto.Signer, encoding string) ([]byte, error) {
	var block *pem.Block
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if encoding == "PKCS1" {
			block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
		}
	case *ecdsa.PrivateKey:
		if encoding == "PKCS1" {
			der, err := x509.MarshalECPrivateKey(k)
			if err != nil {
				return nil, fmt.Errorf("encode private key: %w", err)
			}
			block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
		}
	}
	if block == nil {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("encode private key: %w", err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	return pem.EncodeToMemory(block), nil
}

// parseCertificates decodes every CERTIFICATE block of data; it is an error
// when there is none.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

func parsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	return signer, nil
}

// renewalTime is when a certificate valid from notBefore to notAfter is
// renewed: renewBefore ahead of notAfter, else renewBeforePercentage of
// its lifetime ahead, else a third of it (cert-manager's rules, including
// the fallback when renewBefore is not shorter than the lifetime).
func renewalTime(s certSpec, notBefore, notAfter time.Time) time.Time {
	life := notAfter.Sub(notBefore)
	before := life / 3
	switch {
	case s.RenewBefore > 0 && s.RenewBefore < life:
		before = s.RenewBefore
	case s.RenewBeforePercent > 0:
		before = life * time.Duration(s.RenewBeforePercent) / 100
	}
	return notAfter.Add(-before)
}

// staleReason says why the certificate in data (a Secret's data) must be
// (re)issued for s at now, or returns "" when it is fine. cert is the
// parsed tls.crt when there is one.
func staleReason(s certSpec, data map[string][]byte, now time.Time) (reason string, cert *x509.Certificate) {
	for _, k := range []string{KeyCert, KeyPrivateKey, KeyCA} {
		if len(data[k]) == 0 {
			return fmt.Sprintf("Secret has no %s", k), nil
		}
	}
	certs, err := parseCertificates(data[KeyCert])
	if err != nil {
		return fmt.Sprintf("%s does not hold a certificate: %v", KeyCert, err), nil
	}
	cert = certs[0]
	key, err := parsePrivateKey(data[KeyPrivateKey])
	if err != nil {
		return fmt.Sprintf("%s does not hold a private key: %v", KeyPrivateKey, err), cert
	}
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return fmt.Sprintf("%s does not match %s", KeyPrivateKey, KeyCert), cert
	}
	if _, err := parseCertificates(data[KeyCA]); err != nil {
		return fmt.Sprintf("%s does not hold a certificate: %v", KeyCA, err), cert
	}
	if field := mismatch(s, cert); field != "" {
		return fmt.Sprintf("certificate does not match spec.%s", field), cert
	}
	if rt := renewalTime(s, cert.NotBefore, cert.NotAfter); !now.Before(rt) {
		return fmt.Sprintf("certificate is due for renewal (at %s)", rt.Format(time.RFC3339)), cert
	}
	return "", cert
}

// mismatch returns the first spec field that cert does not match, or "".
func mismatch(s certSpec, cert *x509.Certificate) string {
	ips := func(l []net.IP) []string {
		out := make([]string, len(l))
		for i, ip := range l {
			out[i] = ip.String()
		}
		return out
	}
	uris := func(l []*url.URL) []string {
		out := make([]string, len(l))
		for i, u := range l {
			out[i] = u.String()
		}
		return out
	}
	switch {
	case cert.Subject.CommonName != s.CommonName:
		return "commonName"
	case !sameSet(cert.DNSNames, s.DNSNames):
		return "dnsNames"
	case !sameSet(ips(cert.IPAddresses), ips(s.IPAddresses)):
		return "ipAddresses"
	case !sameSet(uris(cert.URIs), uris(s.URIs)):
		return "uris"
	case !sameSet(cert.EmailAddresses, s.EmailAddresses):
		return "emailAddresses"
	case !sameSet(cert.Subject.Organization, s.Organizations):
		return "subject.organizations"
	case !sameSet(cert.Subject.OrganizationalUnit, s.OrganizationalUnits):
		return "subject.organizationalUnits"
	case cert.IsCA != s.IsCA:
		return "isCA"
	case cert.KeyUsage != s.KeyUsage || !sameSet(cert.ExtKeyUsage, s.ExtKeyUsage):
		return "usages"
	case keyAlgorithm(cert) != s.KeyAlgorithm:
		return "privateKey.algorithm"
	}
	return ""
}

func keyAlgorithm(cert *x509.Certificate) string {
	switch cert.PublicKeyAlgorithm {
	case x509.RSA:
		return "RSA"
	case x509.ECDSA:
		return "ECDSA"
	case x509.Ed25519:
		return "Ed25519"
	}
	return cert.PublicKeyAlgorithm.String()
}

func sameSet[T interface{ ~int | ~string }](a, b []T) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// ipStrings joins IPs for the ip-sans annotation.
func ipStrings(ips []net.IP) string {
	var b bytes.Buffer
	for i, ip := range ips {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ip.String())
	}
	return b.String()
}
