package plan

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Copier provides an image from another engine: a second engine on the
// same machine (Podman's service beside Docker) takes the images the first
// one built instead of building them again.
type Copier interface {
	// Copy stores ref in the target engine when the source engine holds
	// it with inputs hash hash, and returns the source's name. The error
	// wraps ErrNotInSource when the source has no such image (or an older
	// one); any other error is a failed copy.
	Copy(ctx context.Context, ref, hash string) (from string, err error)
}

// ErrNotInSource is Copy's error for an image the source engine does not
// hold with the wanted inputs hash.
var ErrNotInSource = errors.New("not in the source engine with this inputs hash")

// SourceImages is what EngineCopier needs of the engine it copies from.
type SourceImages interface {
	InspectImage(ctx context.Context, ref string) (runtime.Image, error)
	SaveImages(ctx context.Context, refs ...string) (io.ReadCloser, error)
}

// TargetImages is what EngineCopier needs of the engine it copies to.
type TargetImages interface {
	InspectImage(ctx context.Context, ref string) (runtime.Image, error)
	LoadImages(ctx context.Context, archive io.Reader) error
}

var (
	_ SourceImages = runtime.Images(nil)
	_ TargetImages = runtime.Images(nil)
)

// EngineCopier copies images from one engine to another through their
// APIs: the source's image save streamed into the target's image load,
// with nothing written to disk.
type EngineCopier struct {
	From SourceImages
	To   TargetImages
	// FromName names the source engine in messages (its endpoint).
	FromName string
}

// Copy implements Copier.
func (c *EngineCopier) Copy(ctx context.Context, ref, hash string) (string, error) {
	img, err := c.From.InspectImage(ctx, ref)
	if errors.Is(err, runtime.ErrNotFound) {
		return c.FromName, fmt.Errorf("%s: %w", ref, ErrNotInSource)
	}
	if err != nil {
		return c.FromName, err
	}
	if got := img.Labels[LabelInputsHash]; got != hash {
		return c.FromName, fmt.Errorf("%s (its %s is %q, the plan's %s): %w", ref, LabelInputsHash, short(got), short(hash), ErrNotInSource)
	}
	archive, err := c.From.SaveImages(ctx, ref)
	if err != nil {
		return c.FromName, err
	}
	defer archive.Close()
	if err := c.To.LoadImages(ctx, archive); err != nil {
		return c.FromName, fmt.Errorf("copy %s from %s: %w", ref, c.FromName, err)
	}
	got, err := c.To.InspectImage(ctx, ref)
	if err != nil {
		return c.FromName, fmt.Errorf("copy %s from %s: not in the target after the load: %w", ref, c.FromName, err)
	}
	if got.Labels[LabelInputsHash] != hash {
		return c.FromName, fmt.Errorf("copy %s from %s: the target's image has %s %q, want %s", ref, c.FromName, LabelInputsHash, short(got.Labels[LabelInputsHash]), short(hash))
	}
	return c.FromName, nil
}
