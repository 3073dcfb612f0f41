package secrets

// YAML and JSON keys and values, read from a line as they are written
// (no document model: the engine streams).

// key is a mapping key at the start of a line.
type key struct {
	name  []byte
	quote byte // 0, '"' or '\''
	val   int  // index after the ':'
}

func isPlainKeyByte(c byte) bool {
	return isIdentByte(c) || c == '-' || c == '.' || c == '/'
}

// parseKey reads "key:" at pos: a plain key of letters, digits and -._/,
// or a quoted one, followed by ':' and a space or the end of the line.
func parseKey(line []byte, pos int) (key, bool) {
	if pos >= len(line) {
		return key{}, false
	}
	var k key
	i := pos
	switch c := line[pos]; c {
	case '"', '\'':
		end := -1
		if c == '"' {
			end = closeDouble(line, pos+1)
		} else {
			end = closeSingle(line, pos+1)
		}
		if end < 0 {
			return key{}, false
		}
		k.name, k.quote = line[pos+1:end], c
		i = end + 1
		i += indent(line[i:])
		if i >= len(line) || line[i] != ':' {
			return key{}, false
		}
		k.val = i + 1
		return k, true
	}
	for i < len(line) && isPlainKeyByte(line[i]) {
		i++
	}
	if i == pos || i >= len(line) || line[i] != ':' || i+1 < len(line) && !isSpace(line[i+1]) && line[i+1] != '\r' {
		return key{}, false
	}
	k.name, k.val = line[pos:i], i+1
	return k, true
}

type valKind int

const (
	vNone   valKind = iota // nothing: null, or a map or list on the next lines
	vScalar                // a secret candidate in [start, end)
	vBlock                 // a block scalar header in [start, end)
	vOther                 // anything else: not a secret
)

type value struct {
	kind       valKind
	start, end int
	repl       string
	open       bool // '{' or '[' alone: a JSON object or array follows
}

// parseValue reads the value after a key; json says the key was
// double-quoted, so a plain value ends at a comma or bracket.
func parseValue(line []byte, i int, json bool) value {
	i += indent(line[i:])
	end := trimRight(line, len(line))
	if i >= end || line[i] == '#' {
		return value{kind: vNone}
	}
	switch c := line[i]; c {
	case '"', '\'':
		e := -1
		if c == '"' {
			e = closeDouble(line, i+1)
		} else {
			e = closeSingle(line, i+1)
		}
		if e < 0 {
			e = end
		}
		return scalar(line, i+1, e, Marker)
	case '|', '>':
		j := i + 1
		for j < end && (line[j] >= '0' && line[j] <= '9' || line[j] == '+' || line[j] == '-') {
			j++
		}
		if j == end || isSpace(line[j]) && (indent(line[j:])+j == end || line[j+indent(line[j:])] == '#') {
			return value{kind: vBlock, start: i, end: end}
		}
	case '{', '[':
		return value{kind: vOther, open: i+1 == end}
	case '&', '*', '!':
		return value{kind: vOther}
	}
	e := i
	if json {
		for e < end && !(line[e] == ',' || line[e] == '}' || line[e] == ']' || isSpace(line[e])) {
			e++
		}
	} else {
		e = end
		for j := i; j < end; j++ {
			if line[j] == '#' && isSpace(line[j-1]) {
				e = max(i, trimRight(line, j))
				break
			}
		}
	}
	switch string(line[i:e]) {
	case "null", "Null", "NULL", "~", "true", "True", "TRUE", "false", "False", "FALSE":
		return value{kind: vOther, start: i, end: e}
	}
	repl := Marker
	if json {
		repl = `"` + Marker + `"`
	}
	return scalar(line, i, e, repl)
}

func scalar(line []byte, s, e int, repl string) value {
	if e <= s || isPlaceholder(line[s:e]) {
		return value{kind: vOther, start: s, end: max(s, e)}
	}
	return value{kind: vScalar, start: s, end: e, repl: repl}
}
