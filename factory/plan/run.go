package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
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

	// present and label say whether the engine has the image, and its
	// inputs-hash label.
	present bool
	label   string
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
		d.present, d.label = err == nil, img.Labels[LabelInputsHash]
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
	// Targets are the step IDs whose images are wanted. If empty, the
	// steps marked Target, or every step when none is.
	Targets []string
	// Policy returns a step's source policy: config.PolicyBuild,
	// PolicyPull or PolicyPullElseBuild. If nil, or Puller is nil, every
	// image is built.
	Policy func(Step) string
	// Puller provides images from a registry.
	Puller Puller
	// Copier, if set, provides images from another engine: a step whose
	// image that engine holds with the step's inputs hash is copied, not
	// pulled or built (whatever the policy; -rebuild's steps are built).
	Copier Copier
	// Publisher, if set, receives every image of the run that is in the
	// engine at its end (built, pulled or up to date).
	Publisher Publisher

	// Jobs is how many steps may build at once; below 1, one.
	Jobs int
	// MemoryBudget bounds the summed Cost(step).Memory of the steps that
	// build at once; a step above the budget builds alone. If 0, only
	// Jobs bounds them.
	MemoryBudget int64
	// Cost estimates each step's memory and duration (see Cost); if nil,
	// every step costs nothing and ready steps start in plan order.
	Cost func(Step) Cost
	// Exclusive returns a key per step; two steps with the same non-empty
	// key never build at once. Steps whose builders share work done once
	// (one go command compiles a Kubernetes version's binaries for all
	// its component and node images) get the same key, so that the second
	// does not hold a job while it waits for the first. If nil, no keys.
	Exclusive func(Step) string
}

// Puller stores an image in the engine from a registry.
type Puller interface {
	// Pull stores ref, tagged ref, and returns the reference it was
	// pulled as (ref itself, or its name in a mirror).
	Pull(ctx context.Context, ref string) (source string, err error)
}

// Publisher pushes an image of the engine to a registry.
type Publisher interface {
	// Publish pushes ref and returns the reference it was pushed as.
	Publish(ctx context.Context, ref string) (target string, err error)
}

// outcome is what a run did with a step.
type outcome int

const (
	stateNotNeeded outcome = iota
	stateUpToDate
	statePulled
	stateBuild
	stateBuilt
	stateFailed
)

// Run provides the images of the targets and, for each one it builds,
// what that build needs, and builds them: a step starts once the images of
// its dependencies are in the engine, up to RunOptions.Jobs at once within
// the memory budget, the step on the longest remaining path first (see
// Cost and Exclusive). Each step's start and end are reported as they
// happen, so with Jobs > 1 the lines of steps interleave.
//
// Targets are resolved first, top down: an image whose inputs-hash label
// matches its step is up to date; otherwise, where the step's policy
// allows, it is pulled (an image pulled with an inputs-hash label is used
// only when the label is current; a published image has none). Only what
// must be built has its dependencies resolved in turn, so a pulled node
// image needs no Kubernetes binaries.
//
// A failed step does not stop the run: steps that depend on it are
// skipped, the others still build, and the returned error lists every
// failure. After each build, Run checks the image carries the step's hash;
// a builder that forgot the label would otherwise cause a rebuild on every
// run. Run stops when ctx ends.
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
	byID := map[string]*Decision{}
	for i := range decisions {
		byID[decisions[i].Step.ID] = &decisions[i]
	}
	targets := opts.Targets
	if len(targets) == 0 {
		for _, d := range decisions {
			if d.Step.Target {
				targets = append(targets, d.Step.ID)
			}
		}
		if len(targets) == 0 {
			for _, d := range decisions {
				targets = append(targets, d.Step.ID)
			}
		}
	}
	for _, t := range targets {
		if byID[t] == nil {
			return fmt.Errorf("run plan: target %q: no such step", t)
		}
	}

	start := time.Now()
	n := len(decisions)
	index := map[string]int{}
	for i, d := range decisions {
		index[d.Step.ID] = i + 1
	}
	prefix := func(s Step) string { return fmt.Sprintf("[%d/%d] %s", index[s.ID], n, s.ID) }
	state := map[string]outcome{}
	var errs []error

	// Resolve top down: what is current, what can be pulled, what must be
	// built (and then what it needs).
	var resolve func(id string)
	resolve = func(id string) {
		if _, seen := state[id]; seen {
			return
		}
		d := byID[id]
		s := d.Step
		if !d.Build {
			state[id] = stateUpToDate
			return
		}
		if opts.Copier != nil && !slices.Contains(opts.Rebuild, id) {
			t0 := time.Now()
			from, err := opts.Copier.Copy(ctx, s.Image, s.Hash)
			if err == nil {
				state[id] = statePulled
				d.Build, d.Reason = false, "copied from "+from
				fmt.Fprintf(out, "%s: copied %s from %s in %s\n", prefix(s), s.Image, from, time.Since(t0).Round(100*time.Millisecond))
				return
			}
			if !errors.Is(err, ErrNotInSource) {
				state[id] = stateFailed
				errs = append(errs, fmt.Errorf("copy image %q (step %s) from %s: %w", s.Image, id, from, err))
				fmt.Fprintf(out, "%s: copy failed: %v\n", prefix(s), err)
				return
			}
			fmt.Fprintf(out, "%s: not copied (%v)\n", prefix(s), err)
		}
		policy := config.PolicyBuild
		if opts.Policy != nil && opts.Puller != nil && !slices.Contains(opts.Rebuild, id) {
			policy = opts.Policy(s)
		}
		if policy != config.PolicyBuild {
			if d.present && d.label == "" {
				// Pulled earlier: a published image carries no label.
				state[id] = stateUpToDate
				d.Build, d.Reason = false, "pulled earlier (no "+LabelInputsHash+" label)"
				return
			}
			t0 := time.Now()
			from, err := opts.Puller.Pull(ctx, s.Image)
			if err == nil {
				if img, ierr := opts.Images.InspectImage(ctx, s.Image); ierr != nil {
					err = ierr
				} else if l := img.Labels[LabelInputsHash]; l != "" && l != s.Hash {
					err = fmt.Errorf("%s is stale (its %s is %s, the plan's %s)", from, LabelInputsHash, short(l), short(s.Hash))
				}
			}
			if err == nil {
				state[id] = statePulled
				d.Build, d.Reason = false, "pulled from "+from
				fmt.Fprintf(out, "%s: pulled %s from %s in %s\n", prefix(s), s.Image, from, time.Since(t0).Round(100*time.Millisecond))
				return
			}
			if policy == config.PolicyPull {
				state[id] = stateFailed
				errs = append(errs, fmt.Errorf("pull image %q (step %s, policy pull): %w", s.Image, id, err))
				fmt.Fprintf(out, "%s: pull failed, not building (policy pull): %v\n", prefix(s), err)
				return
			}
			fmt.Fprintf(out, "%s: not pulled (%v): building\n", prefix(s), err)
		}
		state[id] = stateBuild
		for _, dep := range s.Deps {
			resolve(dep)
		}
	}
	for _, t := range targets {
		resolve(t)
	}

	var missing []string
	nBuild := 0
	for _, d := range decisions {
		if state[d.Step.ID] != stateBuild {
			continue
		}
		nBuild++
		if opts.Builders[d.Step.Kind] == nil && !slices.Contains(missing, string(d.Step.Kind)) {
			missing = append(missing, string(d.Step.Kind))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("run plan: no builder for kind %s", strings.Join(missing, ", "))
	}
	fmt.Fprintf(out, "images: %d to build\n", nBuild)

	built := 0
	for _, d := range decisions {
		switch state[d.Step.ID] {
		case stateNotNeeded:
			fmt.Fprintf(out, "%s: not needed (%s)\n", prefix(d.Step), d.Reason)
		case stateUpToDate:
			fmt.Fprintf(out, "%s: up to date (%s)\n", prefix(d.Step), d.Step.Image)
		}
	}
	sched := newScheduler(decisions, state, opts)
	fmt.Fprintf(out, "images: building %s\n", sched.describe())
	results := make(chan buildResult)
	for !sched.done() {
		batch := sched.next(ctx)
		for _, s := range batch {
			if s.skip != nil {
				state[s.step.ID] = stateFailed
				errs = append(errs, fmt.Errorf("build image %q (step %s): %w", s.step.Image, s.step.ID, s.skip))
				fmt.Fprintf(out, "%s: %s\n", prefix(s.step), s.skipMsg)
				continue
			}
			fmt.Fprintf(out, "%s: building %s (%s)\n", prefix(s.step), s.step.Image, byID[s.step.ID].Reason)
			go func(st Step) {
				t0 := time.Now()
				bctx, cpu := cputime.With(ctx)
				err := opts.Builders[st.Kind].Build(bctx, st.clone())
				if err == nil {
					err = checkLabel(ctx, opts.Images, st)
				}
				results <- buildResult{step: st, err: err, elapsed: time.Since(t0).Round(100 * time.Millisecond),
					cpu: cpu.Total().Round(100 * time.Millisecond)}
			}(s.step)
		}
		if sched.busy() == 0 {
			if len(batch) == 0 {
				// Unreachable with an acyclic plan (FromSteps checks).
				errs = append(errs, fmt.Errorf("run plan: no step can start, %d wait", len(sched.pending)))
				break
			}
			continue // next() settled every step it released
		}
		r := <-results
		s := r.step
		if r.err != nil {
			state[s.ID] = stateFailed
			errs = append(errs, fmt.Errorf("build image %q (step %s): %w", s.Image, s.ID, r.err))
			fmt.Fprintf(out, "%s: failed after %s (cpu %s): %v\n", prefix(s), r.elapsed, r.cpu, r.err)
		} else {
			state[s.ID] = stateBuilt
			built++
			fmt.Fprintf(out, "%s: built in %s (cpu %s)\n", prefix(s), r.elapsed, r.cpu)
		}
		sched.finished(s.ID)
	}

	counts := map[outcome]int{}
	for _, d := range decisions {
		counts[state[d.Step.ID]]++
	}
	fmt.Fprintf(out, "images: %d built, %d pulled, %d up to date, %d not needed, %d failed or skipped, in %s\n",
		built, counts[statePulled], counts[stateUpToDate], counts[stateNotNeeded], counts[stateFailed], time.Since(start).Round(100*time.Millisecond))

	if opts.Publisher != nil && ctx.Err() == nil {
		t0 := time.Now()
		published := 0
		for _, d := range decisions {
			if st := state[d.Step.ID]; st == stateNotNeeded || st == stateFailed {
				continue
			}
			to, err := opts.Publisher.Publish(ctx, d.Step.Image)
			if err != nil {
				errs = append(errs, fmt.Errorf("publish image %q (step %s): %w", d.Step.Image, d.Step.ID, err))
				fmt.Fprintf(out, "%s: publish failed: %v\n", prefix(d.Step), err)
				continue
			}
			published++
			fmt.Fprintf(out, "%s: published as %s\n", prefix(d.Step), to)
		}
		fmt.Fprintf(out, "images: %d published in %s\n", published, time.Since(t0).Round(100*time.Millisecond))
	}
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
