package oci_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// TestIntegrationBuildOnBase puts a directory layer (with a symlink and a
// hard link) and a file layer on the test image, runs the result and reads
// the files back through the engine.
func TestIntegrationBuildOnBase(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "opt/app"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "opt/app/data.txt"), []byte("from-dir\n"), 0o640))
	must(os.Symlink("data.txt", filepath.Join(dir, "opt/app/link")))
	must(os.Link(filepath.Join(dir, "opt/app/data.txt"), filepath.Join(dir, "opt/app/hard")))

	ref := "capd-e2e.local/oci-test:" + runtime.NewRunID()
	err = oci.Build(ctx, rt, oci.Spec{
		Ref:  ref,
		Base: base,
		Layers: []oci.Layer{
			oci.LayerFromDir(dir),
			oci.LayerFromFiles([]oci.File{{Path: "/usr/local/bin/hello", Mode: 0o755, Data: []byte("#!/bin/sh\necho hello \"$@\"\n")}}),
		},
		Config: oci.Config{Entrypoint: []string{"/usr/local/bin/hello"}, Cmd: []string{"world"}, Labels: map[string]string{"built-by": "oci-test"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })

	img, err := rt.InspectImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if img.Labels["built-by"] != "oci-test" || img.Labels["e2e.capd.x-k8s.io/test-image"] != "true" {
		t.Errorf("labels not merged over the base's: %v", img.Labels)
	}

	runID := runtime.NewRunID()
	name := "capd-e2e-oci-" + runID
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{Name: name, Image: ref, Labels: runtime.RunLabels(runID, "oci-test", nil)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveContainer(context.Background(), name) })
	if code, err := rt.Wait(ctx, name); err != nil || code != 0 {
		t.Fatalf("entrypoint: exit %d, %v", code, err)
	}
	// Start it again with a long-running command to read files through exec.
	name2 := name + "-sh"
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{Name: name2, Image: ref, Entrypoint: []string{"/init.sh"}, Labels: runtime.RunLabels(runID, "oci-test", nil)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveContainer(context.Background(), name2) })
	out, err := runtime.Output(ctx, rt, name2, "sh", "-c", "cat /opt/app/link /opt/app/hard && ls -l /opt/app/data.txt && hello x")
	if err != nil {
		t.Fatal(err)
	}
	want := "from-dir\nfrom-dir\n"
	if got := string(out); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("files through symlink and hard link: %q", got)
	}
	if !contains(string(out), "-rw-r-----") || !contains(string(out), "hello x") {
		t.Errorf("mode not kept or entrypoint script missing: %q", out)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}
