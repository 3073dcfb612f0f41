package image_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	image "github.com/capd-e2e/capd-e2e/factory/certmanagerimage"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// TestIntegrationBuild builds the substitute's image from this repository
// under a test tag in the real engine, checks its label, and runs it with
// -help (its entrypoint must be the static binary).
func TestIntegrationBuild(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	runID := runtime.NewRunID()
	ref := "capd-e2e.local/it-cert-manager-substitute:" + runID
	p, err := plan.FromSteps([]plan.Step{{
		ID: plan.IDCertManagerSubstitute, Kind: plan.KindCertManagerSubstitute, Image: ref,
		Inputs: map[string]string{plan.InputCertManager: "github.com/cert-manager/cert-manager@v1.21.2"},
	}}, plan.Options{RepoRoot: root, Files: map[plan.Kind][]string{plan.KindCertManagerSubstitute: image.Files}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })
	builders := map[plan.Kind]plan.Builder{plan.KindCertManagerSubstitute: &image.Builder{Images: rt, RepoRoot: root}}
	if err := plan.Run(ctx, p, plan.RunOptions{Images: rt, Builders: builders}); err != nil {
		t.Fatal(err)
	}
	step, _ := p.Step(plan.IDCertManagerSubstitute)
	img, err := rt.InspectImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if img.Labels[plan.LabelInputsHash] != step.Hash {
		t.Errorf("label %s = %q, want the step hash %q", plan.LabelInputsHash, img.Labels[plan.LabelInputsHash], step.Hash)
	}

	id, err := rt.RunContainer(ctx, runtime.ContainerSpec{
		Name:   "capd-e2e-it-cert-manager-substitute-" + runID,
		Image:  ref,
		Cmd:    []string{"-help"},
		Labels: runtime.RunLabels(runID, "integration-test", nil),
	})
	if err != nil {
		t.Fatalf("run %s: %v", ref, err)
	}
	t.Cleanup(func() { _ = rt.RemoveContainer(context.Background(), id) })
	code, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rt.Logs(ctx, id, &out, &out); err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(out.String(), "health-probe-bind-address") {
		t.Fatalf("%s -help: exit %d, output:\n%s", ref, code, out.String())
	}
}
