// Package oci assembles container images from files and directories, without
// a registry and without a Dockerfile, and stores them in the engine through
// runtime.Images.
//
// An image is an optional base image already in the engine plus layers (tar
// streams), with a small configuration (entrypoint, env, labels, ...). The
// docker-archive is written with go-containerregistry and streamed into the
// engine through a pipe, so no image is held in memory or on disk twice.
//
// This package must not run anything in a container or reach a registry.
package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	goruntime "runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Layer opens an uncompressed tar stream of one layer. It may be called more
// than once (the digest is computed before the archive is written).
type Layer func() (io.ReadCloser, error)

// Config is the image configuration. Nil slices and empty strings keep the
// base image's values (or none, without a base); Labels are merged over the
// base's.
type Config struct {
	Entrypoint []string
	Cmd        []string
	// Env replaces the base's environment when not nil. If neither sets
	// PATH, a standard PATH is used.
	Env        []string
	WorkingDir string
	User       string
	StopSignal string
	Labels     map[string]string
}

// Spec describes an image to build.
type Spec struct {
	// Ref is the tag of the new image, e.g. "registry.k8s.io/pause:3.10.2".
	Ref string
	// Base, if set, is an image in the engine that the layers go on top of.
	Base string
	// Layers are applied in order.
	Layers []Layer
	Config Config
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Build assembles spec and stores it in the engine under spec.Ref.
func Build(ctx context.Context, rt runtime.Images, spec Spec) error {
	if spec.Ref == "" {
		return errors.New("build image: no reference given")
	}
	tag, err := name.NewTag(spec.Ref, name.WeakValidation)
	if err != nil {
		return fmt.Errorf("build image %q: bad reference: %w", spec.Ref, err)
	}
	img := empty.Image
	if spec.Base != "" {
		base, cleanup, err := loadBase(ctx, rt, spec.Base)
		if err != nil {
			return fmt.Errorf("build image %q: %w", spec.Ref, err)
		}
		defer cleanup()
		img = base
	}
	for i, l := range spec.Layers {
		layer, err := tarball.LayerFromOpener(tarball.Opener(l))
		if err != nil {
			return fmt.Errorf("build image %q: layer %d: %w", spec.Ref, i, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return fmt.Errorf("build image %q: layer %d: %w", spec.Ref, i, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("build image %q: read config: %w", spec.Ref, err)
	}
	cf = cf.DeepCopy()
	applyConfig(cf, spec.Config)
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("build image %q: set config: %w", spec.Ref, err)
	}

	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.Write(tag, img, pw)) }()
	err = rt.LoadImages(ctx, pr)
	_ = pr.CloseWithError(errors.New("load ended")) // unblock the writer if the load stopped early
	if err != nil {
		return fmt.Errorf("build image %q: %w", spec.Ref, err)
	}
	return nil
}

func applyConfig(cf *v1.ConfigFile, c Config) {
	cf.OS = "linux"
	if cf.Architecture == "" {
		cf.Architecture = goruntime.GOARCH
	}
	if c.Entrypoint != nil {
		cf.Config.Entrypoint = c.Entrypoint
		if c.Cmd == nil {
			cf.Config.Cmd = nil // a new entrypoint does not inherit the base's arguments
		}
	}
	if c.Cmd != nil {
		cf.Config.Cmd = c.Cmd
	}
	if c.Env != nil {
		cf.Config.Env = c.Env
	}
	hasPath := false
	for _, e := range cf.Config.Env {
		if len(e) > 5 && e[:5] == "PATH=" {
			hasPath = true
		}
	}
	if !hasPath {
		cf.Config.Env = append(cf.Config.Env, defaultPath)
	}
	if c.WorkingDir != "" {
		cf.Config.WorkingDir = c.WorkingDir
	}
	if c.User != "" {
		cf.Config.User = c.User
	}
	if c.StopSignal != "" {
		cf.Config.StopSignal = c.StopSignal
	}
	if len(c.Labels) > 0 {
		if cf.Config.Labels == nil {
			cf.Config.Labels = map[string]string{}
		}
		maps.Copy(cf.Config.Labels, c.Labels)
	}
}

// loadBase saves ref from the engine into a temporary file and opens it as
// an image. The cleanup function removes the file.
func loadBase(ctx context.Context, rt runtime.Images, ref string) (v1.Image, func(), error) {
	rc, err := rt.SaveImages(ctx, ref)
	if err != nil {
		return nil, nil, fmt.Errorf("base image: %w", err)
	}
	defer rc.Close()
	f, err := os.CreateTemp("", "capd-e2e-base-*.tar")
	if err != nil {
		return nil, nil, fmt.Errorf("base image %q: %w", ref, err)
	}
	cleanup := func() { _ = os.Remove(f.Name()) } // a temporary file: removing it is tidying
	_, err = io.Copy(f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("base image %q: save: %w", ref, err)
	}
	var tagp *name.Tag
	if t, err := name.NewTag(ref, name.WeakValidation); err == nil {
		tagp = &t
	}
	img, err := tarball.ImageFromPath(f.Name(), tagp)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("base image %q: read archive: %w", ref, err)
	}
	return img, cleanup, nil
}

// ReadFiles returns the content of the regular files at paths (e.g.
// "/etc/passwd") in the image ref in the engine, as its layers leave them
// (a later layer's file wins, a deleted one is gone). A path that names
// no regular file is an error naming it.
func ReadFiles(ctx context.Context, rt runtime.Images, ref string, paths ...string) (map[string][]byte, error) {
	img, cleanup, err := loadBase(ctx, rt, ref)
	if err != nil {
		return nil, fmt.Errorf("read files of %q: %w", ref, err)
	}
	defer cleanup()
	want := map[string]string{} // clean relative path -> as asked
	for _, p := range paths {
		want[path.Clean(strings.TrimPrefix(p, "/"))] = p
	}
	fs := mutate.Extract(img)
	defer fs.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(fs)
	for len(out) < len(want) {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read files of %q: %w", ref, err)
		}
		asked, ok := want[path.Clean(strings.TrimPrefix(h.Name, "/"))]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		if out[asked], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("read %s of %q: %w", asked, ref, err)
		}
	}
	for _, p := range want {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("read files of %q: no regular file %s in the image", ref, p)
		}
	}
	return out, nil
}
