package main

import (
	"context"
	"slices"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/images/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
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

func TestSplitList(t *testing.T) {
	if got := splitList(" a, b,,c "); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("splitList = %q", got)
	}
	if got := splitList(""); got != nil {
		t.Errorf("splitList(\"\") = %q", got)
	}
}
