package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Pulls is what a Puller needs of the engine.
type Pulls interface {
	PullImage(ctx context.Context, ref string) error
	TagImage(ctx context.Context, source, target string) error
	RemoveImage(ctx context.Context, ref string) error
}

var _ Pulls = runtime.Images(nil)

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
	Images Pulls
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
