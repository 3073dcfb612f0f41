package plan

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// Cost is what a step is expected to take while it builds. Run uses it to
// build several steps at once without exhausting memory (Memory) and to
// start first the steps on the longest path to a target (Duration).
// Estimates, not limits: nothing is measured or enforced.
type Cost struct {
	// Memory is the step's expected peak memory use, in bytes.
	Memory int64
	// Duration is how long the step is expected to build.
	Duration time.Duration
}

const gib = 1 << 30

// DefaultCost returns a cost per Kind, from builds on a 2-core machine
// (the figures in the build logs of `make images`) and the peak memory of
// each kind of build: compiling and linking all of Kubernetes' binaries at
// once peaks far above anything else, a debootstrap or an image assembly
// needs little. A step whose Kind it does not know costs like a Go build.
func DefaultCost(s Step) Cost {
	switch s.Kind {
	case KindKubeComponent:
		// One go command compiles all seven binaries of a version, for
		// whichever component builds first; the others reuse them (see
		// RunOptions.Exclusive). The estimate puts it on kube-apiserver,
		// which has no dependency and so is ready first.
		// The memory allows for a relaxed garbage collector (`capd-e2e images`
		// runs go with GOGC=400).
		if s.Inputs[InputComponent] == config.KubeAPIServer {
			return Cost{Memory: 6 * gib, Duration: 6 * time.Minute}
		}
		return Cost{Memory: 6 * gib, Duration: 30 * time.Second}
	case KindRootfs:
		return Cost{Memory: gib / 2, Duration: 90 * time.Second}
	case KindKindBase:
		return Cost{Memory: 2 * gib, Duration: 3 * time.Minute}
	case KindNode:
		return Cost{Memory: gib, Duration: time.Minute}
	case KindHAProxy, KindPause:
		return Cost{Memory: gib / 2, Duration: 10 * time.Second}
	default: // Go builds: controllers, etcd, CoreDNS, kube-router, ...
		return Cost{Memory: 2 * gib, Duration: time.Minute}
	}
}

// buildResult is what a build goroutine reports.
type buildResult struct {
	step    Step
	err     error
	elapsed time.Duration
	// cpu is the CPU time of the processes and containers the build
	// started (internal/cputime).
	cpu time.Duration
}

// started is a step the scheduler released: to build, or, with skip set,
// to fail without building.
type started struct {
	step    Step
	skip    error
	skipMsg string
}

// scheduler decides which of the steps to build may start: those whose
// dependencies are in the engine, at most jobs at a time, within the
// memory budget, never two with the same exclusive key, the longest
// remaining path first and plan order among equals. It is not safe for
// concurrent use: Run's loop owns it.
type scheduler struct {
	jobs      int
	budget    int64
	cost      func(Step) Cost
	exclusive func(Step) string

	pending  []Step // in plan order
	priority map[string]time.Duration
	state    map[string]outcome // shared with Run: a dependency's outcome
	running  map[string]Step
	memory   int64
	keys     map[string]bool
}

func newScheduler(decisions []Decision, state map[string]outcome, opts RunOptions) *scheduler {
	s := &scheduler{
		jobs: max(opts.Jobs, 1), budget: opts.MemoryBudget, cost: opts.Cost, exclusive: opts.Exclusive,
		priority: map[string]time.Duration{}, state: state, running: map[string]Step{}, keys: map[string]bool{},
	}
	if s.cost == nil {
		s.cost = func(Step) Cost { return Cost{} }
	}
	if s.exclusive == nil {
		s.exclusive = func(Step) string { return "" }
	}
	for _, d := range decisions {
		if state[d.Step.ID] == stateBuild {
			s.pending = append(s.pending, d.Step)
		}
	}
	// Longest path to a sink, over the steps to build, computed from the
	// last step back (plan order has dependencies first).
	dependents := map[string][]string{}
	for _, st := range s.pending {
		for _, d := range st.Deps {
			dependents[d] = append(dependents[d], st.ID)
		}
	}
	for i := len(s.pending) - 1; i >= 0; i-- {
		st := s.pending[i]
		var longest time.Duration
		for _, d := range dependents[st.ID] {
			longest = max(longest, s.priority[d])
		}
		s.priority[st.ID] = s.cost(st).Duration + longest
	}
	return s
}

func (s *scheduler) describe() string {
	budget := "no memory budget"
	if s.budget > 0 {
		budget = fmt.Sprintf("a memory budget of %.1f GiB", float64(s.budget)/gib)
	}
	return fmt.Sprintf("%d steps, up to %d at once within %s", len(s.pending), s.jobs, budget)
}

func (s *scheduler) done() bool { return len(s.pending) == 0 && len(s.running) == 0 }

func (s *scheduler) busy() int { return len(s.running) }

// next releases the steps that may start now: builds, and steps that must
// fail without building (a dependency failed, or ctx ended).
func (s *scheduler) next(ctx context.Context) []started {
	var out []started
	for {
		progress := false
		ready := s.ready()
		for _, st := range ready {
			if err := ctx.Err(); err != nil {
				s.drop(st.ID)
				out = append(out, started{step: st, skip: err, skipMsg: "not started: " + err.Error()})
				progress = true
				continue
			}
			if j := slices.IndexFunc(st.Deps, func(d string) bool { return s.state[d] == stateFailed }); j >= 0 {
				s.drop(st.ID)
				s.state[st.ID] = stateFailed // its dependents are skipped in turn
				out = append(out, started{step: st, skip: fmt.Errorf("skipped: dependency %s failed", st.Deps[j]),
					skipMsg: "skipped: dependency " + st.Deps[j] + " failed"})
				progress = true
				continue
			}
			if len(s.running) >= s.jobs {
				continue
			}
			key := s.exclusive(st)
			if key != "" && s.keys[key] {
				continue
			}
			mem := s.cost(st).Memory
			if s.budget > 0 && len(s.running) > 0 && s.memory+mem > s.budget {
				continue // a step larger than the budget still builds, alone
			}
			s.drop(st.ID)
			s.running[st.ID] = st
			s.memory += mem
			if key != "" {
				s.keys[key] = true
			}
			out = append(out, started{step: st})
			progress = true
		}
		if !progress {
			return out
		}
	}
}

// ready returns the pending steps none of whose dependencies is pending
// or running, the longest remaining path first.
func (s *scheduler) ready() []Step {
	var out []Step
	for _, st := range s.pending {
		if !slices.ContainsFunc(st.Deps, s.waiting) {
			out = append(out, st)
		}
	}
	slices.SortStableFunc(out, func(a, b Step) int { return cmp.Compare(s.priority[b.ID], s.priority[a.ID]) })
	return out
}

func (s *scheduler) waiting(id string) bool {
	if _, ok := s.running[id]; ok {
		return true
	}
	return slices.ContainsFunc(s.pending, func(st Step) bool { return st.ID == id })
}

func (s *scheduler) drop(id string) {
	s.pending = slices.DeleteFunc(s.pending, func(st Step) bool { return st.ID == id })
}

// finished records the end of a running step; Run has set its outcome.
func (s *scheduler) finished(id string) {
	st := s.running[id]
	delete(s.running, id)
	s.memory -= s.cost(st).Memory
	if key := s.exclusive(st); key != "" {
		delete(s.keys, key)
	}
}
