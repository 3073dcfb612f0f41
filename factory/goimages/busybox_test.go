package goimages

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bz2Tar returns a .tar.bz2 of files (path -> content), made by the bzip2
// tool: Go's library reads bzip2 but does not write it.
func bz2Tar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = &buf
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bzip2: %v", err)
	}
	return out
}

func TestFetchBusyBox(t *testing.T) {
	good := bz2Tar(t, map[string]string{"busybox-1.37.0/Makefile": "all:\n", "busybox-1.37.0/shell/ash.c": "int main;\n"})
	evil := bz2Tar(t, map[string]string{"busybox-1.37.0/../../escape": "x"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good.tar.bz2":
			w.Write(good)
		case "/evil.tar.bz2":
			w.Write(evil)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	digest := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	ctx := context.Background()

	dst := t.TempDir()
	if err := fetchBusyBox(ctx, srv.URL+"/good.tar.bz2", digest(good), dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "shell", "ash.c")); err != nil || string(b) != "int main;\n" {
		t.Errorf("shell/ash.c = %q, %v; want the top directory stripped", b, err)
	}

	for name, tc := range map[string]struct{ url, digest, want string }{
		"wrong digest": {srv.URL + "/good.tar.bz2", strings.Repeat("0", 64), "has sha256 " + digest(good) + ", want 000"},
		"not served":   {srv.URL + "/gone.tar.bz2", digest(good), "404 Not Found"},
		"path escapes": {srv.URL + "/evil.tar.bz2", digest(evil), "leaves the source directory"},
	} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			err := fetchBusyBox(ctx, tc.url, tc.digest, dst)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("fetchBusyBox = %v, want an error with %q", err, tc.want)
			}
			if tc.want != "leaves the source directory" {
				if entries, _ := os.ReadDir(dst); len(entries) != 0 {
					t.Errorf("unpacked %d entries from a tarball that failed its check", len(entries))
				}
			}
		})
	}
}

func TestEditConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".config")
	if err := os.WriteFile(p, []byte("# CONFIG_STATIC is not set\nCONFIG_TC=y\nCONFIG_FEATURE_TC_INGRESS=y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := editConfig(p, busyboxConfig); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "CONFIG_STATIC=y\n# CONFIG_TC is not set\nCONFIG_FEATURE_TC_INGRESS=y\n"; string(b) != want {
		t.Errorf(".config = %q, want %q", b, want)
	}
	if err := editConfig(p, map[string]string{"CONFIG_NOPE": "y"}); err == nil || !strings.Contains(err.Error(), "CONFIG_NOPE is not in the default configuration") {
		t.Errorf("editConfig of an unknown key = %v", err)
	}
}
