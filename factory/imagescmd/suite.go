package imagescmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/suite/selection"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
)

// Environment defaults of the selection flags: the variables `make
// test-e2e` selects specs with (upstream's names).
const (
	EnvSuiteDir    = "E2E_SUITE_DIR"
	EnvLabelFilter = "GINKGO_LABEL_FILTER"
	EnvFocus       = "GINKGO_FOCUS"
	EnvSkip        = "GINKGO_SKIP"
)

// filtered reports whether the options select some of the suite's specs
// (a label filter, focus or skip); without, every step is built.
func (o options) filtered() bool {
	return o.labelFilter != "" || o.focus != "" || len(o.skip) > 0
}

// SuiteBinary is where compileSuite writes the suite's test binary: in the
// suite's own directory, as `ginkgo build` does, so that Ginkgo runs it
// there (its relative paths hold) as a precompiled suite.
func SuiteBinary(dir string) string {
	return filepath.Join(dir, filepath.Base(dir)+".test")
}

// compileSuite compiles the Ginkgo suite in dir (`go test -c -tags e2e`)
// into SuiteBinary(dir), the way the harness's tools are compiled
// (gobuild.HarnessEnv, gobuild.HarnessFlags): it shares most of their
// packages.
func compileSuite(ctx context.Context, dir string) (string, error) {
	bin := SuiteBinary(dir)
	cmd := exec.CommandContext(ctx, "go", slices.Concat([]string{"test", "-c", "-tags", "e2e"}, gobuild.HarnessFlags, []string{"-o", bin, "."})...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gobuild.HarnessEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cputime.Run(ctx, cmd); err != nil {
		return "", fmt.Errorf("compile the suite in %s: %w: %s", dir, err, strings.TrimSpace(out.String()))
	}
	return bin, nil
}

// suiteSelection compiles the suite of o.suite and runs it with
// -e2e.selection and o's Ginkgo flags: the specs a run with those flags
// selects and the images they need, as the suite's own setup computes
// them.
func suiteSelection(ctx context.Context, o options, dir, configPath string, out io.Writer) (selection.Selection, error) {
	var sel selection.Selection
	dir, err := filepath.Abs(dir)
	if err != nil {
		return sel, err
	}
	t0 := time.Now()
	bin, err := compileSuite(ctx, dir)
	if err != nil {
		return sel, err
	}
	fmt.Fprintf(out, "images: suite %s compiled in %s\n", dir, time.Since(t0).Round(100*time.Millisecond))
	if configPath, err = filepath.Abs(configPath); err != nil {
		return sel, err
	}
	tmp, err := os.CreateTemp("", "capd-e2e-selection-*.json")
	if err != nil {
		return sel, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"-e2e.config=" + configPath, "-e2e.selection=" + tmp.Name(),
		fmt.Sprintf("-e2e.use-existing-cluster=%t", o.useExistingCluster)}
	args = append(args, selection.Filter{LabelFilter: o.labelFilter, Focus: o.focus, Skip: o.skip}.Args("-ginkgo.")...)
	// A minute is plenty: the suite only walks its spec tree and reads
	// the config.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cputime.Run(rctx, cmd); err != nil {
		return sel, fmt.Errorf("list the selected specs' needs (%s %s): %w:\n%s", bin, strings.Join(args, " "), err, lastLines(stderr.String(), 30))
	}
	sel, err = selection.Read(tmp.Name())
	if err != nil {
		return sel, err
	}
	if o.selectionOut != "" {
		if err := selection.Write(o.selectionOut, sel); err != nil {
			return sel, err
		}
	}
	return sel, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// neededSteps returns the IDs of the steps that build an image sel needs,
// and the images it needs that no step builds (the config's own images:
// the suite loads them as they are in the engine).
func neededSteps(p *plan.Plan, sel selection.Selection) (ids, unbuilt []string) {
	for _, img := range sel.Images {
		found := false
		for _, s := range p.Steps() {
			if s.Image == img.Ref {
				ids = append(ids, s.ID)
				found = true
			}
		}
		if !found {
			unbuilt = append(unbuilt, img.Ref)
		}
	}
	return ids, unbuilt
}

// neededBy returns, per step of p, who needs it: whoever sel says needs
// the image of a step that is it or depends on it.
func neededBy(p *plan.Plan, sel selection.Selection) map[string][]string {
	out := map[string][]string{}
	var mark func(id string, who []string)
	mark = func(id string, who []string) {
		grew := false
		for _, w := range who {
			if !slices.Contains(out[id], w) {
				out[id] = append(out[id], w)
				grew = true
			}
		}
		if !grew {
			return
		}
		s, _ := p.Step(id)
		for _, d := range s.Deps {
			mark(d, who)
		}
	}
	for _, s := range p.Steps() {
		if who := sel.NeededBy(s.Image); len(who) > 0 {
			mark(s.ID, who)
		}
	}
	for id := range out {
		slices.Sort(out[id])
	}
	return out
}

// selection returns the selection the images are for: the one -selection
// names, or the suite's (suiteSelection), and whether there is one. With
// no suite, or when the suite cannot tell and no spec is filtered (every
// step is built then anyway), there is none.
func (o options) selection(ctx context.Context, cfg *config.Config, out io.Writer) (selection.Selection, bool, error) {
	if o.selectionFile != "" {
		sel, err := selection.Read(o.selectionFile)
		if err == nil {
			describeSelection(sel, o, out)
		}
		return sel, err == nil, err
	}
	dir := o.suite
	if !o.suiteSet {
		dir = filepath.Join(cfg.HarnessDir(), "e2e")
	}
	if dir == "" {
		return selection.Selection{}, false, nil
	}
	sel, err := suiteSelection(ctx, o, dir, cfg.Path(), out)
	if err != nil {
		if o.filtered() {
			return sel, false, err
		}
		fmt.Fprintf(out, "images: which spec needs which image is unknown: %v\nimages: building every step\n", err)
		return sel, false, nil
	}
	describeSelection(sel, o, out)
	return sel, true, nil
}

// describeSelection says what was selected and what it needs.
func describeSelection(sel selection.Selection, o options, out io.Writer) {
	var how []string
	if o.labelFilter != "" {
		how = append(how, fmt.Sprintf("label filter %q", o.labelFilter))
	}
	if o.focus != "" {
		how = append(how, fmt.Sprintf("focus %q", o.focus))
	}
	for _, s := range o.skip {
		how = append(how, fmt.Sprintf("skip %q", s))
	}
	if len(how) == 0 {
		how = append(how, "no filter")
	}
	fmt.Fprintf(out, "images: %d specs selected (%s):\n", len(sel.Specs), strings.Join(how, ", "))
	for _, s := range sel.Specs {
		fmt.Fprintf(out, "images:   %s\n", s)
	}
	fmt.Fprintf(out, "images: they need %d images:\n", len(sel.Images))
	for _, img := range sel.Images {
		fmt.Fprintf(out, "images:   %s (%s)\n", img.Ref, strings.Join(img.NeededBy, ", "))
	}
}

// selectedPlan returns the plan to run and its targets for sel: with a
// filter (or a selection file) and every selected spec's needs known,
// the steps sel needs and what they depend on; otherwise all of full.
func selectedPlan(full *plan.Plan, sel selection.Selection, o options, repoRoot string, out io.Writer) (*plan.Plan, []string, error) {
	if !o.filtered() && o.selectionFile == "" {
		return full, nil, nil
	}
	if !sel.Complete() {
		fmt.Fprintf(out, "images: what these selected specs need is unknown (no Requirement carries their labels): building every step\n")
		for _, s := range sel.Unknown {
			fmt.Fprintf(out, "images:   %s\n", s)
		}
		return full, nil, nil
	}
	ids, unbuilt := neededSteps(full, sel)
	for _, ref := range unbuilt {
		fmt.Fprintf(out, "images: %s is not built here (the config's own image): the suite checks the engine has it\n", ref)
	}
	p, err := subPlan(full, ids, repoRoot)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "images: the selected specs need %d of the plan's %d steps\n", len(p.Steps()), len(full.Steps()))
	return p, ids, nil
}

// sayMissing prints a line for each target whose image is not current:
// what is built for whom, before the build starts.
func sayMissing(ctx context.Context, p *plan.Plan, targets []string, who map[string][]string, rt plan.ImageInspector, rebuild []string, out io.Writer) error {
	ds, err := p.Decide(ctx, rt, rebuild...)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if !d.Build || !d.Step.Target || (len(targets) > 0 && !slices.Contains(targets, d.Step.ID)) {
			continue
		}
		by := ""
		if w := who[d.Step.ID]; len(w) > 0 {
			by = ", needed by " + strings.Join(w, ", ") + ","
		}
		fmt.Fprintf(out, "images: %s%s is not current (%s): providing it and what it lacks\n", d.Step.Image, by, d.Reason)
	}
	return nil
}
