package moby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// InspectImage implements runtime.Images.
func (r *Runtime) InspectImage(ctx context.Context, ref string) (runtime.Image, error) {
	res, err := r.c.ImageInspect(ctx, ref)
	if err != nil {
		return runtime.Image{}, r.wrap(err, "inspect image %q", ref)
	}
	img := runtime.Image{ID: res.ID, RepoTags: res.RepoTags, Size: res.Size, Created: parseTime(res.Created)}
	if res.Config != nil {
		img.Labels = res.Config.Labels
	}
	return img, nil
}

// ListImages implements runtime.Images.
func (r *Runtime) ListImages(ctx context.Context) ([]runtime.Image, error) {
	res, err := r.c.ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		return nil, r.wrap(err, "list images")
	}
	out := make([]runtime.Image, 0, len(res.Items))
	for _, s := range res.Items {
		out = append(out, runtime.Image{ID: s.ID, RepoTags: s.RepoTags, Labels: s.Labels, Size: s.Size, Created: time.Unix(s.Created, 0)})
	}
	return out, nil
}

// SaveImages implements runtime.Images.
func (r *Runtime) SaveImages(ctx context.Context, refs ...string) (io.ReadCloser, error) {
	if len(refs) == 0 {
		return nil, errors.New("save images: no image given")
	}
	res, err := r.c.ImageSave(ctx, refs)
	if err != nil {
		return nil, r.wrap(err, "save images %s", strings.Join(refs, ", "))
	}
	return res, nil
}

// LoadImages implements runtime.Images. The engine reports failures inside
// its progress stream, so the stream is read to its end and checked.
func (r *Runtime) LoadImages(ctx context.Context, archive io.Reader) error {
	res, err := r.c.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return r.wrap(err, "load images")
	}
	defer res.Close()
	return streamError(res, "load images")
}

// streamError reads a JSON message stream and returns the first error it
// carries.
func streamError(rd io.Reader, what string) error {
	dec := json.NewDecoder(rd)
	for {
		var m struct {
			jsonstream.Message
			ErrorMessage string `json:"error,omitempty"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: read engine response: %w", what, err)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", what, m.Error.Message)
		}
		if m.ErrorMessage != "" {
			return fmt.Errorf("%s: %s", what, m.ErrorMessage)
		}
	}
}

// TagImage implements runtime.Images.
func (r *Runtime) TagImage(ctx context.Context, source, target string) error {
	if _, err := r.c.ImageTag(ctx, client.ImageTagOptions{Source: source, Target: target}); err != nil {
		return r.wrap(err, "tag image %q as %q", source, target)
	}
	return nil
}

// RemoveImage implements runtime.Images.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	if _, err := r.c.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil {
		err = r.wrap(err, "remove image %q", ref)
		if errors.Is(err, runtime.ErrNotFound) {
			return nil
		}
		return err
	}
	return nil
}

// anonymous is the X-Registry-Auth of an anonymous request: an empty
// AuthConfig, "{}" base64-encoded, which every engine version accepts.
const anonymous = "e30="

// PullImage implements runtime.Images. A registry's "not found" comes back
// in the progress stream as a message, not as a status, so it is
// classified from the message.
func (r *Runtime) PullImage(ctx context.Context, ref string) error {
	res, err := r.c.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: anonymous})
	if err != nil {
		return r.wrap(err, "pull image %q", ref)
	}
	defer res.Close()
	if err := streamError(res, fmt.Sprintf("pull image %q", ref)); err != nil {
		if isManifestUnknown(err.Error()) {
			return fmt.Errorf("%w: %w", runtime.ErrNotFound, err)
		}
		return err
	}
	return nil
}

// isManifestUnknown reports a registry's answer that it has no such
// repository or tag (distribution's error codes, as engines relay them).
func isManifestUnknown(msg string) bool {
	for _, s := range []string{"manifest unknown", "not found", "name unknown", "repository does not exist"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// PushImage implements runtime.Images.
func (r *Runtime) PushImage(ctx context.Context, ref string) error {
	res, err := r.c.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: anonymous})
	if err != nil {
		return r.wrap(err, "push image %q", ref)
	}
	defer res.Close()
	return streamError(res, fmt.Sprintf("push image %q", ref))
}
