package images

import (
	"context"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestEnsure(t *testing.T) {
	engine := fake.New()
	engine.AddImage(runtime.Image{RepoTags: []string{"kindest/node:v1.36.3"}})
	engine.AddRegistryImage("mirror.local/docker.io/kindest/haproxy:v1", runtime.Image{})
	refs := []string{"kindest/node:v1.36.3", "kindest/haproxy:v1", "capd-e2e/missing:v1"}

	// Without a registry, the missing images are named, with what to do.
	err := Ensure(context.Background(), engine, config.Registry{Policy: config.PolicyBuild}, refs, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "run `make images`") || !strings.Contains(err.Error(), "kindest/haproxy:v1") ||
		!strings.Contains(err.Error(), "capd-e2e/missing:v1") || strings.Contains(err.Error(), "kindest/node") {
		t.Errorf("Ensure = %v", err)
	}
	for _, c := range engine.Calls() {
		if c.Method == "PullImage" {
			t.Errorf("policy build pulled %v", c.Args)
		}
	}

	// With a mirror, what it has is pulled; the rest is still named.
	err = Ensure(context.Background(), engine, config.Registry{Policy: config.PolicyPullElseBuild, Mirror: "mirror.local"}, refs, t.Logf)
	if err == nil || strings.Contains(err.Error(), "kindest/haproxy:v1") || !strings.Contains(err.Error(), "capd-e2e/missing:v1 (pull from mirror.local/docker.io/capd-e2e/missing:v1 failed") {
		t.Errorf("Ensure through a mirror = %v", err)
	}
	if _, err := engine.InspectImage(context.Background(), "kindest/haproxy:v1"); err != nil {
		t.Errorf("the mirror's image was not pulled: %v", err)
	}
}
