package oci_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// TestIntegrationReadFiles reads files of an image in the real engine:
// the test image's init script and busybox, found by their paths with or
// without the leading slash; a symlink or a missing path is an error
// naming it.
func TestIntegrationReadFiles(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	files, err := oci.ReadFiles(ctx, rt, ref, "/init.sh", "bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(files["/init.sh"]), "#!") || !strings.HasPrefix(string(files["bin/busybox"]), "\x7fELF") {
		t.Errorf("files = init.sh %q…, busybox %q…", firstBytes(files["/init.sh"]), firstBytes(files["bin/busybox"]))
	}
	if _, err := oci.ReadFiles(ctx, rt, ref, "/init.sh", "/bin/sh"); err == nil || !strings.Contains(err.Error(), "no regular file /bin/sh") {
		t.Errorf("ReadFiles of a symlink: %v, want an error naming it", err)
	}
	if _, err := oci.ReadFiles(ctx, rt, ref, "/nope"); err == nil || !strings.Contains(err.Error(), "no regular file /nope") {
		t.Errorf("ReadFiles of a missing file: %v, want an error naming it", err)
	}
}

func firstBytes(b []byte) []byte { return b[:min(len(b), 8)] }
