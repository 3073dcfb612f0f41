package secrets

import "bytes"

// Bootstrap tokens and command-line flags that carry credentials.

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
