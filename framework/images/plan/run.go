package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// ImageInspector reads an image's labels from the engine; runtime.Images
// implements it. It returns an error wrapping runtime.ErrNotFound for an
// image the engine does not have.
type ImageInspector interface {
	InspectImage(ctx context.Context, ref string) (runtime.Image, error)
}

var _ ImageInspector = runtime.Images(nil)

// Builder builds the images of one Kind.
type Builder interface {
	// Build builds step.Image from step.Inputs and step.Files, tags it
	// step.Image and labels it step.Labels(). The images of step.Deps are
	// in the engine when it is called. It must return when ctx ends.
	Build(ctx context.Context, step Step) error
}

// BuilderFunc adapts a function to Builder.
type BuilderFunc func(ctx context.Context, step Step) error

// Build calls f.
func (f BuilderFunc) Build(ctx context.Context, step Step) error { return f(ctx, step) }

var _ Builder = BuilderFunc(nil)

// Decision says whether a step must be built, and why.
type Decision struct {
	// Step is the step decided on.
	Step Step
	// Build is true when the image must be built, false when the image in
	// the engine is up to date.
	Build bool
	// Reason explains the decision, e.g. "not in the engine".
	Reason string
}

// Decide compares every step's hash with the LabelInputsHash label of its
// image in the engine, in plan order. A step is built when its image is
// missing, unlabelled or labelled with another hash (its own inputs or a
// dependency's changed), or when its ID is in rebuild. A dependency that
// must be rebuilt only because its image went missing does not rebuild its
// dependents: their hash, and so their content, is unchanged.
func (p *Plan) Decide(ctx context.Context, images ImageInspector, rebuild ...string) ([]Decision, error) {
	for _, id := range rebuild {
		if _, ok := p.index[id]; !ok {
			return nil, fmt.Errorf("rebuild %q: no such step", id)
		}
	}
	out := make([]Decision, 0, len(p.steps))
	for _, s := range p.steps {
		d := Decision{Step: s.clone()}
		img, err := images.InspectImage(ctx, s.Image)
		switch {
		case errors.Is(err, runtime.ErrNotFound):
			d.Build, d.Reason = true, "not in the engine"
		case err != nil:
			return nil, fmt.Errorf("decide step %q: inspect image %q: %w", s.ID, s.Image, err)
		case slices.Contains(rebuild, s.ID):
			d.Build, d.Reason = true, "rebuild requested"
		case img.Labels[LabelInputsHash] == "":
			d.Build, d.Reason = true, "image has no "+LabelInputsHash+" label"
		case img.Labels[LabelInputsHash] != s.Hash:
			d.Build, d.Reason = true, fmt.Sprintf("inputs changed (image %s, plan %s)", short(img.Labels[LabelInputsHash]), short(s.Hash))
		default:
			d.Reason = "up to date"
		}
		out = append(out, d)
	}
	return out, nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// RunOptions are the dependencies of Run.
type RunOptions struct {
	// Images reads image labels. Required.
	Images ImageInspector
	// Builders has a Builder for every Kind that needs building. Required.
	Builders map[Kind]Builder
	// Progress receives one line per step and a summary; if nil, nothing
	// is written.
	Progress io.Writer
	// Rebuild lists step IDs to build even when their image is up to date.
	Rebuild []string
}

// Run decides what to build (see Decide) and builds it in plan order, one
// step at a time (the machines have 2 cores, and every build is
// CPU-bound). Up-to-date images are skipped.
//
// A failed step does not stop the run: steps that depend on it are skipped,
// the others still build, and the returned error lists every failure. After
// each build, Run checks the image carries the step's hash; a builder that
// forgot the label would otherwise cause a rebuild on every run. Run stops
// when ctx ends.
func Run(ctx context.Context, p *Plan, opts RunOptions) error {
	if opts.Images == nil {
		return errors.New("run plan: RunOptions.Images is nil")
	}
	out := opts.Progress
	if out == nil {
		out = io.Discard
	}
	decisions, err := p.Decide(ctx, opts.Images, opts.Rebuild...)
	if err != nil {
		return fmt.Errorf("run plan: %w", err)
	}
	var missing []string
	toBuild := 0
	for _, d := range decisions {
		if !d.Build {
			continue
		}
		toBuild++
		if opts.Builders[d.Step.Kind] == nil && !slices.Contains(missing, string(d.Step.Kind)) {
			missing = append(missing, string(d.Step.Kind))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("run plan: no builder for kind %s", strings.Join(missing, ", "))
	}
	fmt.Fprintf(out, "images: %d to build, %d up to date\n", toBuild, len(decisions)-toBuild)

	start := time.Now()
	var errs []error
	failed := map[string]bool{} // steps that failed or were skipped for it
	built := 0
	n := len(decisions)
	for i, d := range decisions {
		s := d.Step
		prefix := fmt.Sprintf("[%d/%d] %s", i+1, n, s.ID)
		if !d.Build {
			fmt.Fprintf(out, "%s: up to date (%s)\n", prefix, s.Image)
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("build image %q (step %s): %w", s.Image, s.ID, err))
			fmt.Fprintf(out, "%s: not started: %v\n", prefix, err)
			break
		}
		if j := slices.IndexFunc(s.Deps, func(d string) bool { return failed[d] }); j >= 0 {
			failed[s.ID] = true
			errs = append(errs, fmt.Errorf("build image %q (step %s): skipped: dependency %s failed", s.Image, s.ID, s.Deps[j]))
			fmt.Fprintf(out, "%s: skipped: dependency %s failed\n", prefix, s.Deps[j])
			continue
		}
		fmt.Fprintf(out, "%s: building %s (%s)\n", prefix, s.Image, d.Reason)
		t0 := time.Now()
		err := opts.Builders[s.Kind].Build(ctx, s.clone())
		if err == nil {
			err = checkLabel(ctx, opts.Images, s)
		}
		elapsed := time.Since(t0).Round(100 * time.Millisecond)
		if err != nil {
			failed[s.ID] = true
			errs = append(errs, fmt.Errorf("build image %q (step %s): %w", s.Image, s.ID, err))
			fmt.Fprintf(out, "%s: failed after %s: %v\n", prefix, elapsed, err)
			continue
		}
		built++
		fmt.Fprintf(out, "%s: built in %s\n", prefix, elapsed)
	}
	fmt.Fprintf(out, "images: %d built, %d up to date, %d failed or skipped, in %s\n",
		built, n-toBuild, len(failed), time.Since(start).Round(100*time.Millisecond))
	return errors.Join(errs...)
}

// checkLabel verifies a freshly built image carries the step's hash.
func checkLabel(ctx context.Context, images ImageInspector, s Step) error {
	img, err := images.InspectImage(ctx, s.Image)
	if err != nil {
		return fmt.Errorf("builder reported success, but: %w", err)
	}
	if got := img.Labels[LabelInputsHash]; got != s.Hash {
		return fmt.Errorf("builder did not label the image %s=%s (found %q)", LabelInputsHash, s.Hash, got)
	}
	return nil
}
