package specs

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// fakeImages is an engine's image store: the tags it holds. Only the
// methods provideImage calls are implemented.
type fakeImages struct {
	Engine
	tags map[string]string // tag -> image ID
}

func (f *fakeImages) InspectImage(_ context.Context, ref string) (runtime.Image, error) {
	id, ok := f.tags[ref]
	if !ok {
		return runtime.Image{}, fmt.Errorf("image %s: %w", ref, runtime.ErrNotFound)
	}
	return runtime.Image{ID: id}, nil
}

func (f *fakeImages) TagImage(_ context.Context, source, target string) error {
	f.tags[target] = f.tags[source]
	return nil
}

func (f *fakeImages) RemoveImage(_ context.Context, ref string) error {
	delete(f.tags, ref)
	return nil
}

func TestProvideImage(t *testing.T) {
	ctx := context.Background()
	const src, dst = "registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.10.1"

	// Tagged for the spec, and untagged after it.
	e := &fakeImages{tags: map[string]string{src: "sha256:a"}}
	remove, err := provideImage(ctx, e, src, dst)
	if err != nil || remove == nil || e.tags[dst] != "sha256:a" {
		t.Fatalf("provideImage: err %v, tags %v; want %s tagged", err, e.tags, dst)
	}
	if err := remove(ctx); err != nil || e.tags[dst] != "" || e.tags[src] == "" {
		t.Errorf("remove: err %v, tags %v; want only %s", err, e.tags, src)
	}

	// The engine has the target already: used as it is, and kept.
	e = &fakeImages{tags: map[string]string{src: "sha256:a", dst: "sha256:b"}}
	if remove, err := provideImage(ctx, e, src, dst); err != nil || remove != nil || e.tags[dst] != "sha256:b" {
		t.Errorf("with %s there: remove %v, err %v, tags %v; want it untouched", dst, remove != nil, err, e.tags)
	}

	// No source: an error naming it.
	e = &fakeImages{tags: map[string]string{}}
	if _, err := provideImage(ctx, e, src, dst); err == nil || !strings.Contains(err.Error(), src) || !strings.Contains(err.Error(), "make images") {
		t.Errorf("without %s: %v", src, err)
	}

	// An engine that cannot tag.
	if _, err := provideImage(ctx, struct{ Engine }{}, src, dst); err == nil || !strings.Contains(err.Error(), "cannot tag images") {
		t.Errorf("an engine without images: %v", err)
	}
}
