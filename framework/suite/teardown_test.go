package suite

import (
	"context"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

// TestFinishRunRemovesWhatItReports: a run that left a container fails
// its teardown, naming it, and the container is gone afterwards: nothing
// outlives the run, whoever runs the suite.
func TestFinishRunRemovesWhatItReports(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{ID: "c1", Name: "planted", Image: "img", Labels: runtime.RunLabels("run1", "test", nil)}})
	err := finishRun(ctx, f, "run1")
	if err == nil || !strings.Contains(err.Error(), "planted") || !strings.Contains(err.Error(), "now removed") {
		t.Fatalf("finishRun = %v; want an error naming the container", err)
	}
	if rep, err := leak.CheckRun(ctx, f, "run1"); err != nil || !rep.Empty() {
		t.Errorf("after finishRun: %s, %v; want nothing left", rep, err)
	}
	if err := finishRun(ctx, f, "run1"); err != nil {
		t.Errorf("a clean run: %v", err)
	}
}
