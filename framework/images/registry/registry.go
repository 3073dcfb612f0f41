// Package registry takes images from a registry instead of building them,
// and publishes built ones to a registry: a mirror of the public registries
// for an air-gapped site, or a cache a CI job fills and the next job pulls.
//
// Images go through the engine (runtime.Images PullImage and PushImage),
// so the engine's own registry settings apply (a loopback registry is plain
// HTTP without configuration). A mirror serves every image under its full
// name, <mirror>/<registry>/<repository>:<tag>, e.g.
// 127.0.0.1:5001/registry.k8s.io/pause:3.10.2 and
// 127.0.0.1:5001/docker.io/kindest/node:v1.36.3; what is pulled from it is
// tagged with its own name, so nothing downstream knows where it came from.
//
// This package decides nothing about what to pull or build (package plan
// does) and never removes an image it did not tag itself.
package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Images is what the package needs of a runtime.
type Images interface {
	PullImage(ctx context.Context, ref string) error
	PushImage(ctx context.Context, ref string) error
	TagImage(ctx context.Context, source, target string) error
	RemoveImage(ctx context.Context, ref string) error
}

var _ Images = runtime.Images(nil)

// MirrorRef returns ref's name in registry: <registry>/<ref's registry>/<repository>:<tag>.
func MirrorRef(registry, ref string) (string, error) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	host := r.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	tag, ok := r.(name.Tag)
	if !ok {
		return "", fmt.Errorf("image reference %q: a tag is required", ref)
	}
	return strings.TrimSuffix(registry, "/") + "/" + host + "/" + r.Context().RepositoryStr() + ":" + tag.TagStr(), nil
}

// Puller pulls images, from Mirror when it is set. It remembers a registry
// that could not be reached (any failure but "not found"): later pulls from
// it fail at once with the first error, so that a machine without a
// registry pays for one failed pull per registry, not one per image. It is
// safe for concurrent use.
type Puller struct {
	// Images is the engine. Required.
	Images Images
	// Mirror, if set, is the registry every image is pulled from (see
	// MirrorRef).
	Mirror string

	mu          sync.Mutex
	unreachable map[string]error
}

// Pull stores ref in the engine, tagged ref, and returns the reference it
// was pulled as.
func (p *Puller) Pull(ctx context.Context, ref string) (string, error) {
	from := ref
	if p.Mirror != "" {
		var err error
		if from, err = MirrorRef(p.Mirror, ref); err != nil {
			return "", err
		}
	}
	host := registryOf(from)
	p.mu.Lock()
	if err := p.unreachable[host]; err != nil {
		p.mu.Unlock()
		return from, fmt.Errorf("registry %s was not reachable earlier in this run: %w", host, err)
	}
	p.mu.Unlock()
	if err := p.Images.PullImage(ctx, from); err != nil {
		if !errors.Is(err, runtime.ErrNotFound) && ctx.Err() == nil {
			p.mu.Lock()
			if p.unreachable == nil {
				p.unreachable = map[string]error{}
			}
			p.unreachable[host] = err
			p.mu.Unlock()
		}
		return from, err
	}
	if from != ref {
		if err := p.Images.TagImage(ctx, from, ref); err != nil {
			return from, err
		}
		if err := p.Images.RemoveImage(ctx, from); err != nil {
			return from, err
		}
	}
	return from, nil
}

// registryOf returns the registry host of a reference.
func registryOf(ref string) string {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return ref
	}
	return r.Context().RegistryStr()
}

// Publisher pushes images to Registry.
type Publisher struct {
	// Images is the engine. Required.
	Images Images
	// Registry receives the images (see MirrorRef). Required.
	Registry string
}

// Publish pushes ref as its name in Registry and returns that name. The
// extra tag it needs is removed again.
func (p *Publisher) Publish(ctx context.Context, ref string) (string, error) {
	to, err := MirrorRef(p.Registry, ref)
	if err != nil {
		return "", err
	}
	if err := p.Images.TagImage(ctx, ref, to); err != nil {
		return to, err
	}
	pushErr := p.Images.PushImage(ctx, to)
	rmErr := p.Images.RemoveImage(ctx, to)
	if pushErr != nil {
		return to, pushErr
	}
	return to, rmErr
}
