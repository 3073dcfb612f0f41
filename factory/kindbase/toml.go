package kindbase

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// A table header, [a.b] or [[a.b]] (an array of tables).
	tomlTable = regexp.MustCompile(`^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$`)
	tomlKey   = regexp.MustCompile(`^(\s*)([A-Za-z0-9_-]+)\s*=`)
)

// SetTOMLValue sets key to value (a TOML literal such as `true` or
// `"registry.k8s.io/pause:3.10.2"`) in table of a TOML document, keeping
// everything else (comments, order, layout) as it is. The key must appear
// exactly once in that table: a document whose shape changed (a new kind
// release) gives an error rather than a silently unpatched config. Dotted
// keys and inline tables are not understood; containerd's configs do not
// use them for the keys this harness sets.
func SetTOMLValue(doc []byte, table, key, value string) ([]byte, error) {
	lines := strings.SplitAfter(string(doc), "\n")
	current, found := "", -1
	for i, line := range lines {
		if m := tomlTable.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
			current = m[1]
			continue
		}
		m := tomlKey.FindStringSubmatch(line)
		if m == nil || current != table || m[2] != key {
			continue
		}
		if found >= 0 {
			return nil, fmt.Errorf("set %s in [%s]: the key appears twice (lines %d and %d)", key, table, found+1, i+1)
		}
		found = i
		nl := ""
		if strings.HasSuffix(line, "\n") {
			nl = "\n"
		}
		lines[i] = m[1] + key + " = " + value + nl
	}
	if found < 0 {
		return nil, fmt.Errorf("set %s in [%s]: the key is not in the document", key, table)
	}
	return []byte(strings.Join(lines, "")), nil
}

// AddTOMLTable appends table, holding key = value (a TOML literal), to a
// TOML document. The table must not be in the document yet: a kind
// release that starts to set it gives an error here, to be looked at,
// rather than a document TOML parsers reject for the duplicate table.
func AddTOMLTable(doc []byte, table, key, value string) ([]byte, error) {
	for i, line := range strings.SplitAfter(string(doc), "\n") {
		if m := tomlTable.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil && m[1] == table {
			return nil, fmt.Errorf("add [%s]: the table is already in the document (line %d)", table, i+1)
		}
	}
	out := string(doc)
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return []byte(out + "\n[" + table + "]\n  " + key + " = " + value + "\n"), nil
}
