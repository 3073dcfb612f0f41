package secrets

import (
	"bytes"
	"encoding/base64"
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

func allBytes(b []byte, f func(byte) bool) bool {
	for _, c := range b {
		if !f(c) {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// isNameByte is a byte that may continue a word, a file name or a DNS name:
// a bootstrap token next to one is part of something else.
func isNameByte(c byte) bool { return isIdentByte(c) || c == '.' || c == '-' }

func isB64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func indent(b []byte) int {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func trimRight(b []byte, end int) int {
	for end > 0 && (isSpace(b[end-1]) || b[end-1] == '\r') {
		end--
	}
	return end
}

func trimSpace(b []byte) []byte {
	e := trimRight(b, len(b))
	return b[indent(b[:e]):e]
}

// isBootstrapToken tells the [a-z0-9]{6}.[a-z0-9]{16} form with at least a
// digit and a letter.
func isBootstrapToken(v []byte) bool {
	if len(v) != 23 || v[6] != '.' {
		return false
	}
	digit, letter := false, false
	for i, c := range v {
		if i == 6 {
			continue
		}
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z':
			letter = true
		default:
			return false
		}
	}
	return digit && letter
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

// pemLabel reads "LABEL-----" at the start of b and returns the label and
// the length read, or ok false.
func pemLabel(b []byte) (label []byte, n int, ok bool) {
	for i := 0; i < len(b) && i <= 64; i++ {
		c := b[i]
		if c == '-' {
			if bytes.HasPrefix(b[i:], pemDashes) && i > 0 {
				return b[:i], i + len(pemDashes), true
			}
			return nil, 0, false
		}
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ') {
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// isPEMRunByte is a byte that may continue a PEM block written on one line:
// base64, the headers of an encrypted key, spaces and the "\n" escapes of a
// JSON string. It stops at quotes, so a JSON string keeps its end.
func isPEMRunByte(c byte) bool {
	return isB64Byte(c) || c == '\\' || c == ' ' || c == '\t' || c == ':' || c == ',' || c == '-'
}

func findPEM(line []byte, spans []span) ([]span, int) {
	open := -1
	// 'P' is rarer in logs than '-': look for the label first.
	if bytes.Index(line, privateKey) < 0 {
		return spans, open
	}
	for i := 0; i < len(line); {
		j := bytes.Index(line[i:], pemBegin)
		if j < 0 {
			break
		}
		j += i
		h := j + len(pemBegin)
		label, n, ok := pemLabel(line[h:])
		if !ok || !bytes.Contains(label, privateKey) {
			i = h
			continue
		}
		h += n
		end := -1
		if k := bytes.Index(line[h:], pemEnd); k >= 0 {
			m := h + k + len(pemEnd)
			if label, n, ok := pemLabel(line[m:]); ok && bytes.Contains(label, privateKey) {
				end = m + n
			}
		}
		if end < 0 {
			end = h
			for end < len(line) && isPEMRunByte(line[end]) {
				end++
			}
			// Spaces after the run stay, lest a YAML comment that follows
			// become part of the value.
			for end > h && isSpace(line[end-1]) {
				end--
			}
			if trimRight(line, len(line)) <= end {
				open = j
			}
		}
		spans = append(spans, span{j, end, KindPrivateKey, PEMMarker})
		i = end
	}
	return spans, open
}

func findB64PEM(line []byte, spans []span) []span {
	var buf [72]byte
	for i := 0; i < len(line); {
		j := bytes.Index(line[i:], b64Begin)
		if j < 0 {
			break
		}
		j += i
		end := j
		for end < len(line) && isB64Byte(line[end]) {
			end++
		}
		i = end
		if j > 0 && isB64Byte(line[j-1]) {
			continue
		}
		seg := bytes.TrimRight(line[j:end], "=")
		if len(seg) > 96 {
			seg = seg[:96]
		}
		seg = seg[:len(seg)&^3]
		n, err := base64.StdEncoding.Decode(buf[:], seg)
		if err != nil || !bytes.Contains(buf[:n], privateKey) {
			continue
		}
		spans = append(spans, span{j, end, KindPrivateKey, Marker})
	}
	return spans
}

func findBootstrapTokens(line []byte, spans []span) []span {
	for i := 0; i < len(line); {
		k := bytes.IndexByte(line[i:], '.')
		if k < 0 {
			break
		}
		p := i + k
		i = p + 1
		if p < 6 || p+17 > len(line) {
			continue
		}
		s, e := p-6, p+17
		if s > 0 && isNameByte(line[s-1]) || e < len(line) && isNameByte(line[e]) {
			continue
		}
		if !allBytes(line[s:p], isLowerAlnum) || !isBootstrapToken(line[s:e]) {
			continue
		}
		spans = append(spans, span{s, e, KindBootstrapToken, Marker})
		i = e
	}
	return spans
}

// Command-line flags: what may stand before "--", between a flag and its
// value, and end a value.
func isFlagLead(c byte) bool {
	return isSpace(c) || c == '"' || c == '\'' || c == '[' || c == ',' || c == '(' || c == '=' || c == '\\'
}
func isFlagSep(c byte) bool { return isSpace(c) || c == '"' || c == '\'' || c == ',' || c == '\\' }
func isValueStop(c byte) bool {
	return isFlagSep(c) || c == ';' || c == ')' || c == ']' || c == '}' || c == '`' || c == '\r'
}

func findFlags(line []byte, spans []span) ([]span, Kind) {
	var dangling Kind
	for i := 0; i < len(line); {
		k := bytes.Index(line[i:], doubleDash)
		if k < 0 {
			break
		}
		p := i + k
		q := p + 2
		for q < len(line) && (line[q] >= 'a' && line[q] <= 'z' || line[q] == '-') {
			q++
		}
		i = q
		if p > 0 && !isFlagLead(line[p-1]) {
			continue
		}
		kind := flagKind(line[p+2 : q])
		if kind == "" || q < len(line) && isIdentByte(line[q]) {
			continue
		}
		if trimRight(line, len(line)) <= q {
			dangling = kind
			break
		}
		v := q
		if v < len(line) && line[v] == '=' {
			v++
		} else {
			for v < len(line) && v-q < 6 && isFlagSep(line[v]) {
				v++
			}
			if v == q {
				continue
			}
		}
		if trimRight(line, len(line)) <= v {
			dangling = kind
			break
		}
		e := v
		for e < len(line) && !isValueStop(line[e]) {
			e++
		}
		val := line[v:e]
		if !isFlagValue(val) {
			continue
		}
		spans = append(spans, span{v, e, valueKind(kind, val), Marker})
		i = e
	}
	return spans, dangling
}

// isFlagValue tells a word after a flag that is its value: not another
// flag, not a shell comment, not a placeholder.
func isFlagValue(val []byte) bool {
	return len(val) > 0 && val[0] != '-' && val[0] != '#' && !isPlaceholder(val)
}

// flagValue finds the value of a flag that ended the previous line at the
// start of this one.
func flagValue(line []byte, kind Kind, spans []span) []span {
	v := 0
	for v < len(line) && isFlagSep(line[v]) {
		v++
	}
	e := v
	for e < len(line) && !isValueStop(line[e]) {
		e++
	}
	val := line[v:e]
	if !isFlagValue(val) {
		return spans
	}
	return append(spans, span{v, e, valueKind(kind, val), Marker})
}

// closeDouble returns the index of the '"' that ends a double-quoted string
// whose content starts at i, or -1.
func closeDouble(b []byte, i int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// closeSingle does the same for a single-quoted YAML string (a doubled
// quote stands for one).
func closeSingle(b []byte, i int) int {
	for ; i < len(b); i++ {
		if b[i] == '\'' {
			if i+1 < len(b) && b[i+1] == '\'' {
				i++
				continue
			}
			return i
		}
	}
	return -1
}

// closeEscaped returns the index of the next \" (the end of a string inside
// a JSON string), or -1.
func closeEscaped(b []byte, i int) int {
	if k := bytes.Index(b[i:], escapedQuote); k >= 0 {
		return i + k
	}
	return -1
}

// jsonValue returns the span of the string or number value that starts at
// or after i (after spaces), in a JSON document (esc false) or a JSON
// document escaped inside a JSON string (esc true).
func jsonValue(line []byte, i int, esc bool, kind Kind) (span, bool) {
	i += indent(line[i:])
	if i >= len(line) {
		return span{}, false
	}
	var s, e int
	repl := Marker
	switch {
	case esc:
		if !bytes.HasPrefix(line[i:], escapedQuote) {
			return span{}, false
		}
		s = i + 2
		if e = closeEscaped(line, s); e < 0 {
			return span{}, false
		}
	case line[i] == '"':
		s = i + 1
		if e = closeDouble(line, s); e < 0 {
			e = trimRight(line, len(line))
		}
	case line[i] == '-' || line[i] >= '0' && line[i] <= '9':
		s, e = i, i
		for e < len(line) && isNumberByte(line[e]) {
			e++
		}
		if e < len(line) && !(line[e] == ',' || line[e] == '}' || line[e] == ']' || isSpace(line[e]) || line[e] == '\r') {
			return span{}, false
		}
		repl = `"` + Marker + `"`
	default:
		return span{}, false
	}
	if e <= s || isPlaceholder(line[s:e]) {
		return span{}, false
	}
	return span{s, e, valueKind(kind, line[s:e]), repl}, true
}

// findJSONKeys finds "key": value pairs of secretKeys anywhere on a line,
// plain or escaped inside a JSON string (\"key\":\"value\").
func findJSONKeys(line []byte, spans []span) []span {
	for i := 0; i < len(line); {
		k := bytes.Index(line[i:], jsonKeyEnd)
		if k < 0 {
			break
		}
		q := i + k // the key's closing quote
		i = q + 2
		esc := q > 0 && line[q-1] == '\\'
		keyEnd := q
		if esc {
			keyEnd = q - 1
		}
		lo := max(0, keyEnd-maxKeyLen-1)
		o := bytes.LastIndexByte(line[lo:keyEnd], '"')
		if o < 0 {
			continue
		}
		name := line[lo+o+1 : keyEnd]
		kind := keyKind(name)
		if kind == "" {
			continue
		}
		if esc != (lo+o > 0 && line[lo+o-1] == '\\') {
			continue
		}
		if sp, ok := jsonValue(line, q+2, esc, kind); ok {
			spans = append(spans, sp)
			i = sp.end
		}
	}
	return spans
}

// findJSONSecretData redacts the values of every data and stringData object
// on a line that also says "kind":"Secret": single-line JSON such as the
// last-applied-configuration annotation. A line holding a Secret and another
// object with a data map has both redacted.
func findJSONSecretData(line []byte, spans []span) []span {
	if !bytes.Contains(line, secretWord) {
		return spans
	}
	for n, m := range kindSecret {
		if !bytes.Contains(line, m) {
			continue
		}
		esc := n >= 2
		keys := dataKeys
		if esc {
			keys = dataKeysEsc
		}
		for _, key := range keys {
			for i := 0; i < len(line); {
				k := bytes.Index(line[i:], key)
				if k < 0 {
					break
				}
				i += k + len(key)
				spans, i = jsonObjectValues(line, i, esc, spans)
			}
		}
	}
	return spans
}

// jsonObjectValues adds the string values of the object that starts at or
// after i (after spaces) and returns where it stopped reading. It gives up,
// keeping what it found, at anything that is not a flat object of strings,
// numbers, booleans and nulls.
func jsonObjectValues(line []byte, i int, esc bool, spans []span) ([]span, int) {
	i += indent(line[i:])
	if i >= len(line) || line[i] != '{' {
		return spans, i
	}
	i++
	for {
		i += indent(line[i:])
		if i >= len(line) || line[i] == '}' {
			return spans, i
		}
		// The key.
		var e int
		if esc {
			if !bytes.HasPrefix(line[i:], escapedQuote) {
				return spans, i
			}
			e = closeEscaped(line, i+2)
			if e < 0 {
				return spans, i
			}
			i = e + 2
		} else {
			if line[i] != '"' {
				return spans, i
			}
			e = closeDouble(line, i+1)
			if e < 0 {
				return spans, i
			}
			i = e + 1
		}
		i += indent(line[i:])
		if i >= len(line) || line[i] != ':' {
			return spans, i
		}
		i++
		i += indent(line[i:])
		// The value.
		if sp, ok := jsonValue(line, i, esc, KindSecretData); ok {
			sp.kind = KindSecretData
			spans = append(spans, sp)
		}
		switch {
		case esc && bytes.HasPrefix(line[i:], escapedQuote):
			if e = closeEscaped(line, i+2); e < 0 {
				return spans, len(line)
			}
			i = e + 2
		case !esc && i < len(line) && line[i] == '"':
			if e = closeDouble(line, i+1); e < 0 {
				return spans, len(line)
			}
			i = e + 1
		default:
			for i < len(line) && line[i] != ',' && line[i] != '}' && line[i] != '{' && line[i] != '[' && line[i] != '"' {
				i++
			}
		}
		i += indent(line[i:])
		if i >= len(line) || line[i] != ',' {
			return spans, i
		}
		i++
	}
}

// findAuthorization finds the credentials of "Authorization: Bearer x" and
// "Basic x", also as a JSON pair or Go's printing of http.Header
// (Authorization:[Bearer x]).
func findAuthorization(line []byte, spans []span) []span {
	for i := 0; i < len(line); {
		// Look for the rare 'z' of "authorization", then around it.
		k := bytes.IndexByte(line[i:], 'z')
		if k < 0 {
			break
		}
		p := i + k - 7
		i = i + k + 1
		if p < 0 || p+len(authorization) > len(line) || !bytes.EqualFold(line[p:p+len(authorization)], authorization) {
			continue
		}
		i = p + len(authorization)
		q, sep := i, false
		for q < len(line) && q-i < 5 && (isSpace(line[q]) || line[q] == '"' || line[q] == '\'' || line[q] == ':' || line[q] == '=' || line[q] == '[') {
			sep = sep || line[q] == ':' || line[q] == '='
			q++
		}
		if !sep {
			continue
		}
		var scheme int
		switch {
		case len(line)-q > len(bearerScheme) && bytes.EqualFold(line[q:q+len(bearerScheme)], bearerScheme):
			scheme = len(bearerScheme)
		case len(line)-q > len(basicScheme) && bytes.EqualFold(line[q:q+len(basicScheme)], basicScheme):
			scheme = len(basicScheme)
		default:
			continue
		}
		v := q + scheme
		if !isSpace(line[v]) {
			continue
		}
		v += indent(line[v:])
		e := v
		for e < len(line) && !isValueStop(line[e]) {
			e++
		}
		if !isFlagValue(line[v:e]) {
			continue
		}
		spans = append(spans, span{v, e, KindAuthorization, Marker})
		i = e
	}
	return spans
}

func isURLStop(c byte) bool {
	return isSpace(c) || c == '/' || c == '"' || c == '\'' || c == '?' || c == '#' || c == '<' || c == '>' || c == '\\' || c == '@'
}

// findURLPasswords finds the password of scheme://user:password@host.
func findURLPasswords(line []byte, spans []span) []span {
	if bytes.IndexByte(line, '@') < 0 {
		return spans
	}
	for i := 0; i < len(line); {
		k := bytes.Index(line[i:], schemeSep)
		if k < 0 {
			break
		}
		s := i + k + len(schemeSep)
		i = s
		e, colon := s, -1
		for e < len(line) && !isURLStop(line[e]) {
			if line[e] == ':' && colon < 0 {
				colon = e
			}
			e++
		}
		if e >= len(line) || line[e] != '@' || colon < 0 || isPlaceholder(line[colon+1:e]) {
			continue
		}
		spans = append(spans, span{colon + 1, e, KindPassword, Marker})
		i = e
	}
	return spans
}
