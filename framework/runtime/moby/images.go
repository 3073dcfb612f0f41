package moby

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
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
//
// On Podman, an archive's tag without a registry host
// ("capd-e2e/cloud-controller-manager:v0.36.3") is stored as
// localhost/<tag>, where Docker, containerd and the kubelet read
// docker.io/<tag>: an image saved from Podman then reaches a kind node
// under a name nothing looks for. The archive's tags are read as it
// streams past, and each such image is re-tagged docker.io/<tag> (its
// localhost/ name removed), so that every engine names it the same.
func (r *Runtime) LoadImages(ctx context.Context, archive io.Reader) error {
	var tags []string
	finish := func() {}
	if r.podman {
		pr, pw := io.Pipe()
		tagsRead := make(chan struct{})
		go func() {
			defer close(tagsRead)
			tags = archiveTags(pr)
			_, _ = io.Copy(io.Discard, pr) // draining the tee, so the load is not blocked; the load reports its own errors
		}()
		archive = io.TeeReader(archive, pw)
		finish = func() { _ = pw.Close(); <-tagsRead } // an io.Pipe's Close returns nil
	}
	res, err := r.c.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		finish()
		return r.wrap(err, "load images")
	}
	defer res.Close()
	err = streamError(res, "load images")
	// The engine has read the whole archive (or given up): the tags are
	// known.
	finish()
	if err != nil || !r.podman {
		return err
	}
	return r.dockerNames(ctx, tags)
}

// dockerNames gives each image Podman stored as localhost/<tag> the name
// Docker would have given it, docker.io/<tag>.
func (r *Runtime) dockerNames(ctx context.Context, tags []string) error {
	for _, tag := range tags {
		if !podmanLocalhostName(tag) {
			continue
		}
		local := "localhost/" + tag
		if _, err := r.InspectImage(ctx, local); err != nil {
			continue // stored under another name: nothing to fix
		}
		if err := r.TagImage(ctx, local, "docker.io/"+tag); err != nil {
			return fmt.Errorf("load images: name %s as Docker does: %w", local, err)
		}
		if err := r.RemoveImage(ctx, local); err != nil {
			return fmt.Errorf("load images: %w", err)
		}
	}
	return nil
}

// podmanLocalhostName reports whether Podman stores tag under localhost/:
// a tag whose first component is not a registry host (no '.' or ':', not
// "localhost").
func podmanLocalhostName(tag string) bool {
	first, _, found := strings.Cut(tag, "/")
	if !found {
		return true // "busybox:1": docker.io/library/busybox:1 for Docker
	}
	return !strings.ContainsAny(first, ".:") && first != "localhost"
}

// archiveTags returns the tags a docker-archive's manifest.json lists,
// reading the tar stream until it finds it; nil when it has none.
func archiveTags(rd io.Reader) []string {
	tr := tar.NewReader(rd)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil
		}
		if path.Clean(h.Name) != "manifest.json" {
			continue
		}
		var manifest []struct{ RepoTags []string }
		if json.NewDecoder(tr).Decode(&manifest) != nil {
			return nil
		}
		var tags []string
		for _, m := range manifest {
			tags = append(tags, m.RepoTags...)
		}
		return tags
	}
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
