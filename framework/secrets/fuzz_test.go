package secrets

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// FuzzRedact checks that Redact never panics, is idempotent, leaves
// nothing Scan finds, finds what Scan finds, and changes nothing when it
// finds nothing. The seeds are the table cases, made at run time (a failing
// input the fuzzer saves under testdata/ may hold generated key material:
// reduce it before committing it).
func FuzzRedact(f *testing.F) {
	m := testMaterial(f)
	for _, tc := range append(slices.Clone(positiveCases), negativeCases...) {
		f.Add([]byte(m.expand(tc.in)))
	}
	for _, s := range []string{
		"data:\n  a: b\nkind: Secret\n",
		"- data:\n    a:\n      b\n  kind: Secret\n- kind: Secret\n  data:\n    x: |\n      y\n",
		"token:\n  a: b\npassword:\n  x\n",
		"{\"kind\":\"Secret\",\"data\":{\"a\":\"b\",\"c\":1}}\n",
		"-----BEGIN X PRIVATE" + " KEY-----\nabc\n\n-----END X PRIVATE" + " KEY----- tail\n",
		"--token a --password=b Authorization: Basic c https://u:p@h\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, fs := Redact(data)
		if len(fs) == 0 && !bytes.Equal(out, data) {
			t.Fatalf("changed without findings:\n%q\n%q", data, out)
		}
		if again := Scan(out); len(again) > 0 {
			t.Fatalf("Scan after Redact found %v in\n%q\nfrom\n%q", again, out, data)
		}
		if twice, fs2 := Redact(out); !bytes.Equal(twice, out) || len(fs2) > 0 {
			t.Fatalf("not idempotent:\n%q\n%q\nfrom\n%q", out, twice, data)
		}
		if scanned := Scan(data); !slices.Equal(scanned, fs) {
			t.Fatalf("Scan found %v, Redact %v in\n%q", scanned, fs, data)
		}
	})
}

// TestRedactRandomDocuments checks FuzzRedact's properties on documents
// assembled from lines that matter to the structure (keys at several
// indentations, data sections, kinds, block scalars, PEM lines, flags),
// which byte-level mutation rarely builds.
func TestRedactRandomDocuments(t *testing.T) {
	m := testMaterial(t)
	keys := []string{"data", "stringData", "kind", "token", "password", "user", "users", "name", "client-key-data", "metadata", "certificateKey", "x", `"data"`, `"kind"`, `"token"`}
	values := []string{"", "Secret", "ConfigMap", m.S, m.BT, `"` + m.S + `"`, "'" + m.S + "'", "|", ">-", "{", "[", "null", `""`, Marker, "${X}", "x # c", m.S + " # --token " + m.S2}
	lines := []string{"---", "}", "},", "]", "", "# comment", "-----BEGIN RSA PRIVATE" + " KEY-----", strings.Split(m.RSA, "\n")[1], "-----END RSA PRIVATE" + " KEY-----", "kubeadm join --token " + m.BT, "--token", m.S, `"` + m.S + `",`, "Authorization: Bearer " + m.JWT}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(strings.Repeat(" ", 2*rng.IntN(4)))
			switch rng.IntN(4) {
			case 0:
				b.WriteString(lines[rng.IntN(len(lines))])
			default:
				if rng.IntN(4) == 0 {
					b.WriteString("- ")
				}
				b.WriteString(keys[rng.IntN(len(keys))] + ":")
				if v := values[rng.IntN(len(values))]; v != "" {
					b.WriteString(" " + v)
				}
			}
			b.WriteString("\n")
		}
		data := []byte(b.String())
		out, fs := Redact(data)
		if again := Scan(out); len(again) > 0 {
			t.Fatalf("Scan after Redact found %v in\n%s\nfrom\n%s", again, out, data)
		}
		if twice, _ := Redact(out); !bytes.Equal(twice, out) {
			t.Fatalf("not idempotent:\n%s\n---- then ----\n%s\n---- from ----\n%s", out, twice, data)
		}
		if scanned := Scan(data); !slices.Equal(scanned, fs) {
			t.Fatalf("Scan found %v, Redact %v in\n%s", scanned, fs, data)
		}
	}
}
