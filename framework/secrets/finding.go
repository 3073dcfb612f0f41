package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
)

// Kind names what sort of secret a Finding is; the package documentation
// says what each one matches.
type Kind string

// The kinds of secret this package finds.
const (
	KindPrivateKey      Kind = "private-key"
	KindBootstrapToken  Kind = "bootstrap-token"
	KindClientKeyData   Kind = "client-key-data"
	KindKubeconfigToken Kind = "kubeconfig-token"
	KindToken           Kind = "token"
	KindPassword        Kind = "password"
	KindCertificateKey  Kind = "certificate-key"
	KindSecretData      Kind = "secret-data"
	KindTokenFlag       Kind = "token-flag"
	KindAuthorization   Kind = "authorization"
)

const (
	// Marker replaces a secret value.
	Marker = "REDACTED"
	// PEMMarker replaces a whole PEM private key block, on one line.
	PEMMarker = "-----REDACTED PRIVATE KEY-----"
)

// Finding is one secret: where it is and a fingerprint of it, never the
// secret itself.
type Finding struct {
	// Path is the file, slash-separated and relative to the root given to
	// ScanTree or RedactTree; empty from Scan and Redact.
	Path string
	// Line is the 1-based line, in the original content, where the secret
	// starts (for a PEM block, its BEGIN line; for a multi-line value, its
	// key's line).
	Line int
	// Kind says what sort of secret it is.
	Kind Kind
	// Fingerprint is "sha256:" and the first 8 hex digits of the secret's
	// SHA-256, "/" and its length in bytes, e.g. "sha256:1a2b3c4d/23": enough
	// to tell whether two findings are the same secret, not to recover it.
	Fingerprint string
}

// String formats f as "path:line: kind fingerprint".
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s %s", f.Path, f.Line, f.Kind, f.Fingerprint)
}

// rank orders kinds for a stretch of text two detectors both claim: the
// one that says more about where the secret is wins.
func rank(k Kind) int {
	switch k {
	case KindSecretData:
		return 0
	case KindClientKeyData:
		return 1
	case KindKubeconfigToken:
		return 2
	case KindCertificateKey:
		return 3
	case KindPassword:
		return 4
	case KindToken:
		return 5
	case KindTokenFlag:
		return 6
	case KindAuthorization:
		return 7
	case KindBootstrapToken:
		return 8
	default:
		return 9
	}
}

// fingerprint accumulates a secret that may span lines.
type fingerprint struct {
	h hash.Hash
	n int
}

func newFingerprint(b []byte) *fingerprint {
	fp := &fingerprint{h: sha256.New()}
	fp.add(b)
	return fp
}

func (fp *fingerprint) add(b []byte) {
	fp.h.Write(b)
	fp.n += len(b)
}

func (fp *fingerprint) String() string {
	sum := fp.h.Sum(nil)
	return "sha256:" + hex.EncodeToString(sum[:4]) + "/" + strconv.Itoa(fp.n)
}

func fingerprintOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:4]) + "/" + strconv.Itoa(len(b))
}
