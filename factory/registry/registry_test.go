package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestPublisher(t *testing.T) {
	engine := fake.New()
	engine.AddImage(runtime.Image{ID: "sha256:b", RepoTags: []string{"capd-e2e/kind-base:v0.33.0"}})
	p := &Publisher{Images: engine, Registry: "127.0.0.1:5001"}
	to, err := p.Publish(context.Background(), "capd-e2e/kind-base:v0.33.0")
	if err != nil || to != "127.0.0.1:5001/docker.io/capd-e2e/kind-base:v0.33.0" {
		t.Fatalf("Publish = %q, %v", to, err)
	}
	if got := engine.RegistryImages(); !slices.Equal(got, []string{to}) {
		t.Errorf("registry holds %v", got)
	}
	if _, err := engine.InspectImage(context.Background(), to); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the push tag was left in the engine: %v", err)
	}
	if _, err := p.Publish(context.Background(), "capd-e2e/missing:v1"); err == nil || !strings.Contains(err.Error(), "capd-e2e/missing:v1") {
		t.Errorf("Publish(missing) = %v", err)
	}
}
