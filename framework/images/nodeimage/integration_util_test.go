//go:build images

package nodeimage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/internal/testengine"
)

// imageTest returns the loaded config and a runtime closed at the end of the
// test. These tests need the images of `make images`, so they carry the
// build tag "images" and run in `make test-images`, never in `make test`.
func imageTest(t testing.TB) (*config.Config, runtime.Runtime) {
	t.Helper()
	rt := testengine.Runtime(t)
	cfg, err := config.Load(filepath.Join("..", "..", "..", "config", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, rt
}

// requireImage fails the test when the engine lacks ref.
func requireImage(t testing.TB, rt runtime.Runtime, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rt.InspectImage(ctx, ref); err != nil {
		t.Fatalf("image %s: %v (run `make images` first)", ref, err)
	}
}
