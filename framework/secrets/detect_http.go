package secrets

import "bytes"

// Credentials in HTTP: Authorization headers and passwords in URLs.

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
