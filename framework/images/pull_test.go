package images

import (
	"context"
	"errors"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestMirrorRef(t *testing.T) {
	for ref, want := range map[string]string{
		"kindest/node:v1.36.3":               "127.0.0.1:5001/docker.io/kindest/node:v1.36.3",
		"registry.k8s.io/pause:3.10.2":       "127.0.0.1:5001/registry.k8s.io/pause:3.10.2",
		"busybox:1":                          "127.0.0.1:5001/docker.io/library/busybox:1",
		"registry.k8s.io/coredns/coredns:v1": "127.0.0.1:5001/registry.k8s.io/coredns/coredns:v1",
		"localhost:5000/x/y:dev":             "127.0.0.1:5001/localhost:5000/x/y:dev",
	} {
		got, err := MirrorRef("127.0.0.1:5001/", ref)
		if err != nil || got != want {
			t.Errorf("MirrorRef(%s) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := MirrorRef("m", "registry.k8s.io/pause@sha256:0123456789012345678901234567890123456789012345678901234567890123"); err == nil {
		t.Error("a digest reference was accepted")
	}
}

func TestPullerThroughAMirror(t *testing.T) {
	engine := fake.New()
	engine.AddRegistryImage("mirror.local/docker.io/kindest/node:v1.36.3", runtime.Image{ID: "sha256:n"})
	p := &Puller{Images: engine, Mirror: "mirror.local"}
	from, err := p.Pull(context.Background(), "kindest/node:v1.36.3")
	if err != nil || from != "mirror.local/docker.io/kindest/node:v1.36.3" {
		t.Fatalf("Pull = %q, %v", from, err)
	}
	if _, err := engine.InspectImage(context.Background(), "kindest/node:v1.36.3"); err != nil {
		t.Errorf("the pulled image is not tagged with its own name: %v", err)
	}
	if _, err := engine.InspectImage(context.Background(), from); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the mirror's tag was left behind: %v", err)
	}

	// "Not found" is an answer: the mirror is asked again.
	if _, err := p.Pull(context.Background(), "kindest/node:v9.9.9"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Pull(missing) = %v", err)
	}
	engine.AddRegistryImage("mirror.local/docker.io/kindest/node:v9.9.9", runtime.Image{})
	if _, err := p.Pull(context.Background(), "kindest/node:v9.9.9"); err != nil {
		t.Errorf("Pull after the mirror got it = %v", err)
	}
}

func TestPullerRemembersAnUnreachableRegistry(t *testing.T) {
	engine := fake.New()
	down := errors.New(`Get "https://registry.k8s.io/v2/": dial tcp: lookup registry.k8s.io: no such host`)
	engine.SetPullError("registry.k8s.io/", down)
	p := &Puller{Images: engine}
	for _, ref := range []string{"registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:3.6.8-0", "registry.k8s.io/kube-proxy:v1.36.3"} {
		if _, err := p.Pull(context.Background(), ref); !errors.Is(err, down) {
			t.Errorf("Pull(%s) = %v, want the registry's error", ref, err)
		}
	}
	var pulls int
	for _, c := range engine.Calls() {
		if c.Method == "PullImage" {
			pulls++
		}
	}
	if pulls != 1 {
		t.Errorf("the engine was asked %d times; once is enough for an unreachable registry", pulls)
	}
	// Other registries are still asked.
	engine.AddRegistryImage("kindest/node:v1.36.3", runtime.Image{})
	if _, err := p.Pull(context.Background(), "kindest/node:v1.36.3"); err != nil {
		t.Errorf("Pull from another registry = %v", err)
	}
}
