package cli

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// token returns a bootstrap token made now, so that no token is committed.
func token() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 23)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	b[0], b[1], b[6] = 'a', '1', '.'
	return string(b)
}

func TestScanRedactScan(t *testing.T) {
	root := t.TempDir()
	tok := token()
	dir := filepath.Join(root, "clusters", "c1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal.log")
	if err := os.WriteFile(journal, []byte("ok\nkubeadm join 172.18.0.3:6443 --token "+tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if code := runSecrets([]string{"scan", root}, &out, &errOut); code != 1 {
		t.Fatalf("scan exit code %d, want 1; stderr:\n%s", code, errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), tok) {
		t.Error("scan printed the token")
	}
	want := journal + ":2: bootstrap-token sha256:"
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), journal+": mode -rw-r--r--, wider than 0600, holds [bootstrap-token]") {
		t.Errorf("scan output:\n%s\nwant a line starting %q and the exposed file", out.String(), want)
	}

	out.Reset()
	errOut.Reset()
	if code := runSecrets([]string{"redact", root}, &out, &errOut); code != 0 {
		t.Fatalf("redact exit code %d; stderr:\n%s", code, errOut.String())
	}
	if out.String() != "redacted "+journal+"\n" {
		t.Errorf("redact output %q", out.String())
	}
	if b, _ := os.ReadFile(journal); strings.Contains(string(b), tok) {
		t.Error("the token is still in the file")
	}

	out.Reset()
	if code := runSecrets([]string{"scan", journal}, &out, &errOut); code != 0 || out.Len() != 0 {
		t.Errorf("second scan: exit code %d, output %q", code, out.String())
	}
}

func TestUsageAndErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{nil, {"scan"}, {"frob", "."}} {
		if code := runSecrets(args, &out, &errOut); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
	errOut.Reset()
	missing := filepath.Join(t.TempDir(), "nope")
	if code := runSecrets([]string{"scan", missing}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), missing) {
		t.Errorf("missing path: exit code %d, stderr %q", code, errOut.String())
	}
}
