// Package runtimetest is what integration tests (TestIntegration*) of the
// runtime and of every package built on it share, as net/http/httptest is
// for HTTP: the real container engine, the same way everywhere (skipped
// under -short, and a failure, never a skip, when no engine answers, so
// that CI cannot go green without one), and a small test image made
// without a registry (EnsureImage).
//
// It is for tests only: nothing outside _test.go files may import it.
package runtimetest

import (
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// Engine connects to the engine at DOCKER_HOST (or the default socket) and
// closes the connection when the test ends.
func Engine(t testing.TB) *moby.Runtime {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs a container engine; skipped under -short")
	}
	r, err := moby.New(moby.Config{})
	if err != nil {
		t.Fatalf("integration tests need a container engine: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() }) // a client connection: nothing to lose
	return r
}
