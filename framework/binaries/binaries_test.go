package binaries_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/binaries"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// The test image's /bin/busybox (the host's busybox-static) stands in
// for kubeadm in a node image: "busybox echo v1.2.3" prints a version.
func TestExtractCopiesTheProgramOfTheVersionAsked(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx := context.Background()
	image, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	runID := runtime.NewRunID()
	runtimetest.RemoveRunOnCleanup(t, rt, runID)
	want, err := os.ReadFile(busybox())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := func(version, dest, path string) binaries.ExtractInput {
		return binaries.ExtractInput{
			Image: image, Path: path, VersionArgs: []string{"echo", "v1.2.3"}, Version: version,
			Dest: dest, Container: "capd-e2e-binaries-test-" + runID, Labels: runtime.RunLabels(runID, "binaries-test", nil),
		}
	}

	t.Run("copied", func(t *testing.T) {
		dest := filepath.Join(dir, "v1.2.3", "busybox")
		if err := binaries.Extract(ctx, rt, in("v1.2.3", dest, "/bin/busybox")); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dest)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, not the image's busybox (%d bytes)", dest, len(got), len(want))
		}
		if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v (%v), want 0755", dest, fi.Mode(), err)
		}
	})
	t.Run("another version is refused, nothing written", func(t *testing.T) {
		dest := filepath.Join(dir, "other", "busybox")
		err := binaries.Extract(ctx, rt, in("v9.9.9", dest, "/bin/busybox"))
		if err == nil || !strings.Contains(err.Error(), `is version "v1.2.3", want "v9.9.9"`) || !strings.Contains(err.Error(), image) {
			t.Fatalf("Extract of the wrong version: %v; want an error naming the image and both versions", err)
		}
		if _, err := os.Stat(dest); !os.IsNotExist(err) {
			t.Errorf("%s was written (%v)", dest, err)
		}
	})
	t.Run("a link is refused", func(t *testing.T) {
		// /bin/echo is a symlink to busybox in the test image.
		link := in("v1.2.3", filepath.Join(dir, "link", "echo"), "/bin/echo")
		link.VersionArgs = []string{"v1.2.3"}
		err := binaries.Extract(ctx, rt, link)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Extract of a symlink: %v; want a refusal", err)
		}
	})
	// Every container went, whatever the outcome.
	left, err := leak.CheckRun(ctx, rt, runID)
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("Extract left %v", left)
	}
}

func TestExtractNamesMissingInput(t *testing.T) {
	err := binaries.Extract(context.Background(), nil, binaries.ExtractInput{Image: "img", Path: "kubeadm"})
	if err == nil {
		t.Fatal("Extract with missing input: no error")
	}
	for _, field := range []string{"Container", "Dest", "Path", "Version", "VersionArgs"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error %q does not name %s", err, field)
		}
	}
	if strings.Contains(err.Error(), "Image") {
		t.Errorf("the error %q names Image, which was given", err)
	}
}

func busybox() string {
	if p := os.Getenv(runtimetest.BusyboxEnv); p != "" {
		return p
	}
	return "/bin/busybox"
}
