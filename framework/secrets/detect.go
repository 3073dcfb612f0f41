package secrets

import (
	"bytes"
)

// span is a stretch [start, end) of a line that holds a secret, and what
// replaces it.
type span struct {
	start, end int
	kind       Kind
	repl       string
}

var (
	pemBegin   = []byte("-----BEGIN ")
	pemEnd     = []byte("-----END ")
	pemDashes  = []byte("-----")
	privateKey = []byte("PRIVATE KEY")
	// b64Begin is how every base64-encoded PEM file starts: the encoding
	// of "-----BEGIN" and the top four bits of the space after it.
	b64Begin      = []byte("LS0tLS1CRUdJTi")
	jsonKeyEnd    = []byte(`":`)
	doubleDash    = []byte("--")
	schemeSep     = []byte("://")
	authorization = []byte("authorization")
	secretWord    = []byte("Secret")
	kindSecret    = [][]byte{[]byte(`"kind":"Secret"`), []byte(`"kind": "Secret"`), []byte(`\"kind\":\"Secret\"`), []byte(`\"kind\": \"Secret\"`)}
	dataKeys      = [][]byte{[]byte(`"data":`), []byte(`"stringData":`)}
	dataKeysEsc   = [][]byte{[]byte(`\"data\":`), []byte(`\"stringData\":`)}
	escapedQuote  = []byte(`\"`)
	markerBytes   = []byte(Marker)
	bearerScheme  = []byte("Bearer")
	basicScheme   = []byte("Basic")
	kindKey       = []byte("kind")
	userKey       = []byte("user")
	dataKey       = []byte("data")
	stringDataKey = []byte("stringData")
)

// secretKeys lists the keys whose value is a secret, compared without
// regard to case, and its kind. token under a user map becomes
// KindKubeconfigToken.
var secretKeys = []struct {
	name []byte
	kind Kind
}{
	{[]byte("token"), KindToken},
	{[]byte("password"), KindPassword},
	{[]byte("client-key-data"), KindClientKeyData},
	{[]byte("id-token"), KindToken},
	{[]byte("access-token"), KindToken},
	{[]byte("refresh-token"), KindToken},
	{[]byte("id_token"), KindToken},
	{[]byte("access_token"), KindToken},
	{[]byte("refresh_token"), KindToken},
	{[]byte("bearertoken"), KindToken},
	{[]byte("bearer-token"), KindToken},
	{[]byte("identitytoken"), KindToken},
	{[]byte("registrytoken"), KindToken},
	{[]byte("tlsbootstraptoken"), KindToken},
	{[]byte("secretaccesskey"), KindPassword},
	{[]byte("secret_access_key"), KindPassword},
	{[]byte("aws_secret_access_key"), KindPassword},
	{[]byte("passwd"), KindPassword},
	{[]byte("client-secret"), KindPassword},
	{[]byte("clientsecret"), KindPassword},
	{[]byte("client_secret"), KindPassword},
	{[]byte("certificatekey"), KindCertificateKey},
	{[]byte("certificate-key"), KindCertificateKey},
}

// maxKeyLen is the length of the longest key in secretKeys.
const maxKeyLen = 21

func keyKind(name []byte) Kind {
	if len(name) < 5 || len(name) > maxKeyLen {
		return ""
	}
	for _, k := range secretKeys {
		if bytes.EqualFold(name, k.name) {
			return k.kind
		}
	}
	return ""
}

// secretFlags maps a command-line flag (without its dashes) to the kind of
// its value.
func flagKind(name []byte) Kind {
	switch string(name) {
	case "token", "discovery-token", "tls-bootstrap-token":
		return KindTokenFlag
	case "certificate-key":
		return KindCertificateKey
	case "password":
		return KindPassword
	}
	return ""
}

// valueKind is kind, unless the value has the bootstrap token form, which
// says more.
func valueKind(kind Kind, v []byte) Kind {
	if len(v) == 23 && isBootstrapToken(v) {
		return KindBootstrapToken
	}
	return kind
}

// isPlaceholder tells values that stand for a secret without being one:
// what Redact leaves, templates and masks, or words that are all such.
func isPlaceholder(v []byte) bool {
	if len(v) == 0 || bytes.Equal(v, markerBytes) {
		return true
	}
	if bytes.IndexByte(v, ' ') > 0 {
		for w := range bytes.FieldsSeq(v) {
			if !isPlaceholder(w) {
				return false
			}
		}
		return true
	}
	switch {
	case v[0] == '<' && v[len(v)-1] == '>':
		return true
	case len(v) > 2 && v[0] == '$' && (v[1] == '{' && v[len(v)-1] == '}' || v[1] == '(' && v[len(v)-1] == ')'):
		return true
	case len(v) > 1 && v[0] == '$' && allBytes(v[1:], isIdentByte):
		return true
	case len(v) > 3 && v[0] == '{' && v[1] == '{':
		return true
	}
	return allBytes(v, func(c byte) bool { return c == '*' })
}

// inline runs the detectors that need no context beyond the line. It
// returns the spans found, appended to spans; the start of a PEM private
// key whose base64 runs to the end of the line (so its body follows on the
// next lines), or -1; and the kind of a secret flag that ends the line
// without its value (so its value starts the next line, as in a
// pretty-printed JSON argument list), or "".
func inline(line []byte, spans []span) ([]span, int, Kind) {
	spans, open := findPEM(line, spans)
	spans = findB64PEM(line, spans)
	spans = findBootstrapTokens(line, spans)
	spans, dangling := findFlags(line, spans)
	spans = findJSONKeys(line, spans)
	spans = findJSONSecretData(line, spans)
	spans = findAuthorization(line, spans)
	spans = findURLPasswords(line, spans)
	return spans, open, dangling
}
