package secrets

import "bytes"

// Secrets in JSON: keys, and the data of a Secret written as JSON.

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
