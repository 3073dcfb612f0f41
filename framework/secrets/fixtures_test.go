package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// Nothing in these tests' sources looks like a secret: every key, token and
// password is made at test time, so that no secret scanner flags the
// repository. Templates name them with {{...}} placeholders.

// material is one test run's secrets and look-alikes.
type material struct {
	BT string // a bootstrap token
	// BTLetters has a bootstrap token's form but no digit, like a file name.
	BTLetters string
	S         string // a random password-like string
	S2        string
	JWT       string
	Hex       string // 32 random bytes in hex, as kubeadm's certificate key
	Hash      string // sha256:<64 hex>, as a CA cert hash
	RSA       string // PEM blocks, without their final newline
	EC        string
	PKCS8     string
	SSH       string
	Cert      string
	Pub       string
	KeyB64    string // base64 of a PEM private key, as in a kubeconfig
	CertB64   string
}

var (
	materialOnce sync.Once
	shared       material
)

// testMaterial returns keys made once per test binary (RSA generation is
// slow) and fresh tokens.
func testMaterial(t testing.TB) material {
	t.Helper()
	materialOnce.Do(func() {
		rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		rsaPEM, err := keyutil.MarshalPrivateKeyToPEM(rsaKey)
		if err != nil {
			panic(err)
		}
		ecPEM, err := keyutil.MarshalPrivateKeyToPEM(ecKey)
		if err != nil {
			panic(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(ecKey)
		if err != nil {
			panic(err)
		}
		pkcs8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE" + " KEY", Bytes: der})
		// An OpenSSH key's body is opaque to the scanner: random bytes do.
		ssh := pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE" + " KEY", Bytes: randomBytes(400)})
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1),
			Subject:      pkix.Name{CommonName: "kubernetes"},
			NotBefore:    time.Now(),
			NotAfter:     time.Now().Add(time.Hour),
			IsCA:         true,
		}
		certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ecKey.PublicKey, ecKey)
		if err != nil {
			panic(err)
		}
		cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})
		pubDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
		if err != nil {
			panic(err)
		}
		pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
		shared = material{
			RSA:     strings.TrimSuffix(string(rsaPEM), "\n"),
			EC:      strings.TrimSuffix(string(ecPEM), "\n"),
			PKCS8:   strings.TrimSuffix(string(pkcs8), "\n"),
			SSH:     strings.TrimSuffix(string(ssh), "\n"),
			Cert:    strings.TrimSuffix(string(cert), "\n"),
			Pub:     strings.TrimSuffix(string(pub), "\n"),
			KeyB64:  base64.StdEncoding.EncodeToString(rsaPEM),
			CertB64: base64.StdEncoding.EncodeToString(cert),
		}
	})
	m := shared
	m.BT = bootstrapToken()
	m.BTLetters = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return 'a' + r - '0'
		}
		return r
	}, bootstrapToken())
	m.S = password()
	m.S2 = password()
	m.JWT = jwt()
	m.Hex = hex.EncodeToString(randomBytes(32))
	sum := sha256.Sum256(randomBytes(32))
	m.Hash = "sha256:" + hex.EncodeToString(sum[:])
	return m
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

const lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"

// bootstrapToken returns a token of kubeadm's form, with a digit and a
// letter as almost all real ones have.
func bootstrapToken() string {
	for {
		b := make([]byte, 23)
		for i := range b {
			b[i] = lowerAlnum[mrand.IntN(len(lowerAlnum))]
		}
		b[6] = '.'
		if isBootstrapToken(b) {
			return string(b)
		}
	}
}

// password returns 20 random letters and digits (at least one digit, no
// dot: never of the bootstrap token form).
func password() string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 20)
	for i := range b {
		b[i] = chars[mrand.IntN(len(chars))]
	}
	b[mrand.IntN(len(b))] = byte('0' + mrand.IntN(10))
	return string(b)
}

func jwt() string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"RS256","kid":"x"}`)) + "." +
		enc.EncodeToString(randomBytes(90)) + "." + enc.EncodeToString(randomBytes(64))
}

// indentPEM indents every line but the first by n spaces, for a block
// scalar whose first line the template indents.
func indentPEM(p string, n int) string {
	return strings.ReplaceAll(p, "\n", "\n"+strings.Repeat(" ", n))
}

// prefixPEM prefixes every line but the first, as a journal does.
func prefixPEM(p, prefix string) string {
	return strings.ReplaceAll(p, "\n", "\n"+prefix)
}

// expand fills a template's placeholders from m.
func (m material) expand(s string) string {
	const journal = "Jan 02 15:04:05.123456 c1-md-0 cloud-init[812]: "
	return strings.NewReplacer(
		"{{BT}}", m.BT,
		"{{BTLETTERS}}", m.BTLetters,
		// Digits only, 6 and 19 of them, as no float prints.
		"{{DIGITS}}", "123456."+strings.Repeat("1234567890", 2)[:19],
		"{{S}}", m.S,
		"{{S2}}", m.S2,
		"{{JWT}}", m.JWT,
		"{{HEX}}", m.Hex,
		"{{HASH}}", m.Hash,
		"{{RSA}}", m.RSA,
		"{{RSA4}}", indentPEM(m.RSA, 4),
		"{{RSAJOURNAL}}", prefixPEM(m.RSA, journal),
		"{{RSAJSON}}", strings.ReplaceAll(m.RSA, "\n", `\n`),
		"{{EC}}", m.EC,
		"{{PKCS8}}", m.PKCS8,
		"{{SSH}}", m.SSH,
		"{{CERT}}", m.Cert,
		"{{CERT4}}", indentPEM(m.Cert, 4),
		"{{PUB}}", m.Pub,
		"{{KEYB64}}", m.KeyB64,
		"{{CERTB64}}", m.CertB64,
		"{{JOURNAL}}", journal,
	).Replace(s)
}

// secrets returns the values a redacted text must not hold any more.
func (m material) secrets() []string {
	out := []string{m.BT, m.S, m.S2, m.JWT, m.KeyB64[20:60], m.Hex}
	for _, p := range []string{m.RSA, m.EC, m.PKCS8, m.SSH} {
		// A line of each key's body.
		out = append(out, strings.Split(p, "\n")[2])
	}
	return out
}
