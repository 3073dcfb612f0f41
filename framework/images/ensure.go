// Package images makes sure the engine holds the images a run needs before
// anything is created (Ensure), taking them from a registry where the
// config's build.registry allows (Puller): a mirror of the public
// registries for an air-gapped site, or a cache a CI job fills and the next
// job pulls. A missing image is reported by name with what to run, never
// left for kind or CAPD to pull.
//
// Images go through the engine (PullImage), so the engine's own registry
// settings apply (a loopback registry is plain HTTP without configuration).
// A mirror serves every image under its full name,
// <mirror>/<registry>/<repository>:<tag>, e.g.
// 127.0.0.1:5001/registry.k8s.io/pause:3.10.2 and
// 127.0.0.1:5001/docker.io/kindest/node:v1.36.3; what is pulled from it is
// tagged with its own name, so nothing downstream knows where it came from.
//
// This package builds nothing (the image factory, `make images`, does) and
// never removes an image it did not tag itself.
package images

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Engine is what Ensure and ToLoad need of the engine.
type Engine interface {
	Pulls
	InspectImage(ctx context.Context, ref string) (runtime.Image, error)
}

var _ Engine = runtime.Images(nil)

// Ensure checks that the engine has every image of refs and pulls, as
// reg allows, those it has not. It fails naming every image still missing,
// with why. log, if set, receives a line per image pulled.
func Ensure(ctx context.Context, rt Engine, reg config.Registry, refs []string, log func(string, ...any)) error {
	puller := &Puller{Images: rt, Mirror: reg.Mirror}
	var missing []string
	for _, ref := range refs {
		_, err := rt.InspectImage(ctx, ref)
		if err == nil {
			continue
		}
		if !errors.Is(err, runtime.ErrNotFound) {
			return err
		}
		if reg.Mirror == "" && reg.Policy == config.PolicyBuild {
			missing = append(missing, ref)
			continue
		}
		from, perr := puller.Pull(ctx, ref)
		if perr != nil {
			missing = append(missing, fmt.Sprintf("%s (pull from %s failed: %v)", ref, from, perr))
			continue
		}
		if log != nil {
			log("pulled %s from %s", ref, from)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("images missing from the engine (run `make images` with this config): %s", strings.Join(missing, "; "))
	}
	return nil
}

// ToLoad returns the references of images to load into a cluster's nodes:
// a mustLoad image must be in the engine (Ensure made sure), a tryLoad one
// is left out when it is not. log, if set, receives a line per image left
// out.
func ToLoad(ctx context.Context, rt Engine, images []config.Image, log func(string, ...any)) ([]string, error) {
	var refs []string
	for _, img := range images {
		if _, err := rt.InspectImage(ctx, img.Name); err != nil {
			if img.LoadBehavior == config.TryLoad {
				if log != nil {
					log("skipping image %s (tryLoad): %v", img.Name, err)
				}
				continue
			}
			return nil, fmt.Errorf("image %s (mustLoad): %w", img.Name, err)
		}
		refs = append(refs, img.Name)
	}
	return refs, nil
}
