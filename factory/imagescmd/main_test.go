package imagescmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/suite/selection"
)

func testPlan(t *testing.T) *plan.Plan {
	t.Helper()
	p, err := plan.FromSteps([]plan.Step{
		{ID: "rootfs/net", Kind: plan.KindRootfs, Image: "net:1", Inputs: map[string]string{}},
		{ID: "kube-proxy/v1", Kind: plan.KindKubeComponent, Image: "proxy:1", Inputs: map[string]string{}, Deps: []string{"rootfs/net"}},
		{ID: "kube-apiserver/v1", Kind: plan.KindKubeComponent, Image: "apiserver:1", Inputs: map[string]string{}},
		{ID: "kind-base", Kind: plan.KindKindBase, Image: "base:1", Inputs: map[string]string{}},
		{ID: "node/v1", Kind: plan.KindNode, Image: "node:1", Inputs: map[string]string{}, Deps: []string{"kind-base", "kube-proxy/v1"}},
	}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(p *plan.Plan) []string {
	var out []string
	for _, s := range p.Steps() {
		out = append(out, s.ID)
	}
	slices.Sort(out)
	return out
}

func TestSubPlanKeepsDependenciesAndHashes(t *testing.T) {
	p := testPlan(t)
	sub, err := subPlan(p, []string{"kube-proxy/v1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(sub), []string{"kube-proxy/v1", "rootfs/net"}; !slices.Equal(got, want) {
		t.Errorf("steps = %v, want %v", got, want)
	}
	for _, s := range sub.Steps() {
		orig, _ := p.Step(s.ID)
		if s.Hash != orig.Hash {
			t.Errorf("%s: hash changed in the sub-plan", s.ID)
		}
	}
	if _, err := subPlan(p, []string{"nope"}, ""); err == nil {
		t.Error("want an error for an unknown step")
	}
}

// noImages is an ImageInspector of an empty engine.
type noImages struct{}

func (noImages) InspectImage(_ context.Context, ref string) (runtime.Image, error) {
	return runtime.Image{}, runtime.ErrNotFound
}

func TestWithoutUnbuildable(t *testing.T) {
	p := testPlan(t)
	builders := map[plan.Kind]plan.Builder{plan.KindRootfs: plan.BuilderFunc(nil), plan.KindKubeComponent: plan.BuilderFunc(nil)}
	sub, dropped, err := withoutUnbuildable(context.Background(), p, noImages{}, builders, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kind-base", "node/v1"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped = %v, want %v", dropped, want)
	}
	if got, want := ids(sub), []string{"kube-apiserver/v1", "kube-proxy/v1", "rootfs/net"}; !slices.Equal(got, want) {
		t.Errorf("kept = %v, want %v", got, want)
	}
}

func TestListFlags(t *testing.T) {
	o, err := parseFlags([]string{"--only", " a, b,,c ", "--rebuild", "x", "--rebuild", "y"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.only, []string{"a", "b", "c"}) || !slices.Equal(o.rebuild, []string{"x", "y"}) {
		t.Errorf("--only %q, --rebuild %q", o.only, o.rebuild)
	}
	if o, err := parseFlags(nil); err != nil || o.only != nil {
		t.Errorf("no --only: %q, %v", o.only, err)
	}
	if _, err := parseFlags([]string{"extra"}); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("an extra argument: %v, want an error naming it", err)
	}
}

func TestJobs(t *testing.T) {
	o, err := parseFlags([]string{"--jobs", "3"})
	if err != nil || o.jobs != 3 {
		t.Errorf("-jobs 3: %+v, %v", o, err)
	}
	t.Setenv(EnvJobs, "5")
	if o, err := parseFlags(nil); err != nil || o.jobs != 5 {
		t.Errorf("%s=5: %+v, %v", EnvJobs, o, err)
	}
	t.Setenv(EnvJobs, "two")
	if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), EnvJobs+`="two"`) {
		t.Errorf("%s=two: %v, want an error naming it", EnvJobs, err)
	}
	t.Setenv(EnvJobs, "")
	if _, err := parseFlags([]string{"--jobs", "0"}); err == nil || !strings.Contains(err.Error(), "--jobs 0") {
		t.Errorf("--jobs 0: %v, want an error naming it", err)
	}
}

func TestCopyFromIsSetOnlyWhenGiven(t *testing.T) {
	if o, err := parseFlags(nil); err != nil || o.copyFromSet {
		t.Errorf("no flag, no %s: %+v, %v; want the default (copySource decides)", EnvCopyFrom, o, err)
	}
	if o, err := parseFlags([]string{"--copy-from", "unix:///var/run/docker.sock"}); err != nil || !o.copyFromSet || o.copyFrom != "unix:///var/run/docker.sock" {
		t.Errorf("-copy-from: %+v, %v", o, err)
	}
	t.Setenv(EnvCopyFrom, "")
	if o, err := parseFlags(nil); err != nil || !o.copyFromSet || o.copyFrom != "" {
		t.Errorf("%s=\"\": %+v, %v; want copying turned off", EnvCopyFrom, o, err)
	}
}

func TestSelectedPlanBuildsWhatTheSpecsNeed(t *testing.T) {
	p := testPlan(t)
	sel := selection.Selection{Specs: []string{"upgrade it"}, Images: []selection.Image{
		{Ref: "proxy:1", NeededBy: []string{"k8s-upgrade"}},
		{Ref: "registry.example/provider:v1", NeededBy: []string{selection.SuiteSetup}},
	}}
	var out strings.Builder
	sub, targets, err := selectedPlan(p, sel, options{labelFilter: "K8s-Upgrade"}, "", &out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(sub), []string{"kube-proxy/v1", "rootfs/net"}; !slices.Equal(got, want) {
		t.Errorf("steps = %v, want %v", got, want)
	}
	if !slices.Equal(targets, []string{"kube-proxy/v1"}) {
		t.Errorf("targets = %v", targets)
	}
	if !strings.Contains(out.String(), "registry.example/provider:v1 is not built here") {
		t.Errorf("no line for the image no step builds:\n%s", out.String())
	}

	// Without a filter, every step; with a spec of unknown needs, too.
	for name, tc := range map[string]struct {
		o   options
		sel selection.Selection
	}{
		"no filter":     {options{}, sel},
		"unknown needs": {options{focus: "x"}, selection.Selection{Specs: []string{"x"}, Unknown: []string{"x"}}},
	} {
		all, targets, err := selectedPlan(p, tc.sel, tc.o, "", io.Discard)
		if err != nil || len(all.Steps()) != len(p.Steps()) || targets != nil {
			t.Errorf("%s: %d of %d steps, targets %v, err %v; want the whole plan", name, len(all.Steps()), len(p.Steps()), targets, err)
		}
	}
}

func TestNeededByFollowsDependencies(t *testing.T) {
	p := testPlan(t)
	sel := selection.Selection{Specs: []string{"a"}, Images: []selection.Image{
		{Ref: "node:1", NeededBy: []string{"quick-start", selection.SuiteSetup}},
		{Ref: "proxy:1", NeededBy: []string{"k8s-upgrade"}},
	}}
	who := neededBy(p, sel)
	for id, want := range map[string][]string{
		"node/v1":           {"quick-start", selection.SuiteSetup},
		"kind-base":         {"quick-start", selection.SuiteSetup},
		"kube-proxy/v1":     {"k8s-upgrade", "quick-start", selection.SuiteSetup},
		"rootfs/net":        {"k8s-upgrade", "quick-start", selection.SuiteSetup},
		"kube-apiserver/v1": nil,
	} {
		if got := who[id]; !slices.Equal(got, want) {
			t.Errorf("%s: needed by %q, want %q", id, got, want)
		}
	}
}

func TestSelectionFlags(t *testing.T) {
	t.Setenv(EnvLabelFilter, "PR-Blocking")
	t.Setenv(EnvSkip, "a  b")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.labelFilter != "PR-Blocking" || !slices.Equal(o.skip, []string{"a", "b"}) || !o.filtered() || o.suiteSet {
		t.Errorf("from the environment: %+v", o)
	}
	o, err = parseFlags([]string{"--label-filter=", "--skip=", "--suite="})
	if err != nil {
		t.Fatal(err)
	}
	if o.filtered() || !o.suiteSet || o.suite != "" {
		t.Errorf("flags over the environment: %+v", o)
	}
}

// parseFlags parses args as the command (Command) does.
func parseFlags(args []string) (options, error) {
	var f flags
	fs := pflag.NewFlagSet("images", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.define(fs)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return f.options(fs)
}
