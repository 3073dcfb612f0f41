package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// TestIntegrationClean runs `capd-e2e clean` against the engine: the
// container of a test whose process is gone is removed and said so; a
// live process's container is left, named by neither line.
func TestIntegrationClean(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	dead, live := runtime.NewRunID(), runtime.NewRunID()
	for id, owner := range map[string]string{dead: runtime.OwnerOf(999999999, 1), live: runtime.ProcessOwner()} {
		if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{
			Name: "capd-e2e-clean-" + id, Image: ref, Entrypoint: []string{"sleep", "600"},
			Labels: runtime.RunLabels(id, "clean-test", map[string]string{runtime.LabelOwner: owner}),
		}); err != nil {
			t.Fatal(err)
		}
		runtimetest.RemoveRunOnCleanup(t, rt, id)
	}

	var out, errOut bytes.Buffer
	code := runClean(ctx, cleanOptions{timeout: 2 * time.Minute}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "run "+dead+" (owner ") || !strings.Contains(out.String(), "removed leftovers for run "+dead) {
		t.Errorf("the output does not say run %s was removed:\n%s", dead, out.String())
	}
	if strings.Contains(out.String(), live) {
		t.Errorf("the output names the live run %s:\n%s", live, out.String())
	}
	for id, want := range map[string]int{dead: 0, live: 1} {
		cs, err := rt.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: id}})
		if err != nil || len(cs) != want {
			t.Errorf("run %s: %d containers (%v), want %d", id, len(cs), err, want)
		}
	}
}
