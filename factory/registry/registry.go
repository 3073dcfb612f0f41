// Package registry publishes built images to a registry: a mirror of the
// public registries for an air-gapped site, or a cache a CI job fills and
// the next job pulls (framework/images pulls them back, under the same
// names: images.MirrorRef).
//
// Images go through the engine (runtime.Images PushImage), so the engine's
// own registry settings apply (a loopback registry is plain HTTP without
// configuration). This package decides nothing about what to build (package
// plan does) and never removes an image it did not tag itself.
package registry

import (
	"context"

	"github.com/capd-e2e/capd-e2e/framework/images"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Pushes is what a Publisher needs of the engine.
type Pushes interface {
	PushImage(ctx context.Context, ref string) error
	TagImage(ctx context.Context, source, target string) error
	RemoveImage(ctx context.Context, ref string) error
}

var _ Pushes = runtime.Images(nil)

// Publisher pushes images to Registry.
type Publisher struct {
	// Images is the engine. Required.
	Images Pushes
	// Registry receives the images (see images.MirrorRef). Required.
	Registry string
}

// Publish pushes ref as its name in Registry and returns that name. The
// extra tag it needs is removed again.
func (p *Publisher) Publish(ctx context.Context, ref string) (string, error) {
	to, err := images.MirrorRef(p.Registry, ref)
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
