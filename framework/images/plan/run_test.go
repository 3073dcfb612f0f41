package plan

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

// recorder is a Builder for every kind that "builds" by storing a labelled
// image in a fake engine, and records the order of builds.
type recorder struct {
	engine *fake.Runtime
	fail   map[string]error // step ID -> error to return
	label  bool

	mu    sync.Mutex
	built []string
}

func (r *recorder) Build(_ context.Context, s Step) error {
	r.mu.Lock()
	r.built = append(r.built, s.ID)
	r.mu.Unlock()
	if err := r.fail[s.ID]; err != nil {
		return err
	}
	img := runtime.Image{ID: "sha256:" + s.Hash, RepoTags: []string{s.Image}}
	if r.label {
		img.Labels = s.Labels()
	}
	r.engine.AddImage(img)
	return nil
}

var _ Builder = (*recorder)(nil)

func allKinds(b Builder) map[Kind]Builder {
	m := map[Kind]Builder{}
	for _, k := range []Kind{KindRootfs, KindKindBase, KindKubeComponent, KindEtcd, KindCoreDNS, KindPause,
		KindKubeRouter, KindNode, KindHAProxy, KindClusterAPI, KindCertManagerSubstitute} {
		m[k] = b
	}
	return m
}

func TestRunBuildsWhatChangedThenNothing(t *testing.T) {
	engine := engineWith(newPlan(t, loadConfig(t), testOpts))
	c := loadConfig(t)
	k := &c.Build.Kubernetes[1]
	k.Etcd.Version, k.Etcd.Image = "v3.7.1", "registry.k8s.io/etcd:3.7.1-0"
	c.Variables[config.VarEtcdVersionUpgradeTo] = "3.7.1-0"
	p := newPlan(t, c, testOpts)

	rec := &recorder{engine: engine, label: true}
	var out bytes.Buffer
	if err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Progress: &out}); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if want := []string{"etcd/v3.7.1", "node/v1.37.2"}; !slices.Equal(rec.built, want) {
		t.Errorf("built %v, want %v", rec.built, want)
	}
	log := out.String()
	for _, re := range []string{
		`(?m)^images: 2 to build, 24 up to date$`,
		`(?m)^\[\d+/26\] etcd/v3\.7\.1: building registry\.k8s\.io/etcd:3\.7\.1-0 \(not in the engine\)$`,
		`(?m)^\[\d+/26\] node/v1\.37\.2: building kindest/node:v1\.37\.2 \(inputs changed \(image [0-9a-f]{12}, plan [0-9a-f]{12}\)\)$`,
		`(?m)^\[\d+/26\] node/v1\.37\.2: built in \d+(\.\d)?m?s$`,
		`(?m)^\[1/26\] \S+: up to date \(\S+\)$`,
		`(?m)^images: 2 built, 24 up to date, 0 failed or skipped, in \S+$`,
	} {
		if !regexp.MustCompile(re).MatchString(log) {
			t.Errorf("progress lacks %s:\n%s", re, log)
		}
	}

	// A second run finds everything up to date.
	rec.built = nil
	out.Reset()
	if err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Progress: &out}); err != nil {
		t.Fatal(err)
	}
	if len(rec.built) != 0 || !strings.Contains(out.String(), "images: 0 to build, 26 up to date") {
		t.Errorf("second run built %v:\n%s", rec.built, out.String())
	}
}

func TestRunFromScratchFollowsPlanOrder(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := fake.New()
	rec := &recorder{engine: engine, label: true}
	if err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec)}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range p.Steps() {
		want = append(want, s.ID)
	}
	if !slices.Equal(rec.built, want) {
		t.Errorf("built %v\nwant  %v", rec.built, want)
	}
}

func TestRunFailureSkipsDependents(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := fake.New()
	boom := errors.New("go build: exit status 1")
	rec := &recorder{engine: engine, label: true, fail: map[string]error{"etcd/v3.7.0": boom}}
	var out bytes.Buffer
	err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Progress: &out})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want it to wrap the builder's error", err)
	}
	for _, want := range []string{
		`build image "registry.k8s.io/etcd:3.7.0-0" (step etcd/v3.7.0): go build: exit status 1`,
		`build image "kindest/node:v1.37.2" (step node/v1.37.2): skipped: dependency etcd/v3.7.0 failed`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run error lacks %q:\n%v", want, err)
		}
	}
	if slices.Contains(rec.built, "node/v1.37.2") {
		t.Error("node/v1.37.2 was built although etcd/v3.7.0 failed")
	}
	if !slices.Contains(rec.built, "node/v1.36.3") || !slices.Contains(rec.built, IDCertManagerSubstitute) {
		t.Errorf("independent steps were not built: %v", rec.built)
	}
	if !strings.Contains(out.String(), "etcd/v3.7.0: failed after") || !strings.Contains(out.String(), "2 failed or skipped") {
		t.Errorf("progress:\n%s", out.String())
	}
}

func TestRunChecksTheLabel(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := engineWith(p)
	if err := engine.RemoveImage(context.Background(), "kindest/haproxy:v20230606-42a2262b"); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{engine: engine, label: false}
	err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec)})
	if err == nil || !strings.Contains(err.Error(), "builder did not label the image "+LabelInputsHash) {
		t.Errorf("Run = %v, want a missing-label error", err)
	}
}

func TestRunNeedsABuilderPerKind(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := fake.New()
	rec := &recorder{engine: engine, label: true}
	builders := allKinds(rec)
	delete(builders, KindHAProxy)
	delete(builders, KindPause)
	err := Run(context.Background(), p, RunOptions{Images: engine, Builders: builders})
	if err == nil || !strings.Contains(err.Error(), "no builder for kind pause, haproxy") && !strings.Contains(err.Error(), "no builder for kind haproxy, pause") {
		t.Errorf("Run = %v", err)
	}
	if len(rec.built) != 0 {
		t.Errorf("built %v before noticing a missing builder", rec.built)
	}
	// Kinds with nothing to build need no builder.
	full := engineWith(p)
	if err := Run(context.Background(), p, RunOptions{Images: full}); err != nil {
		t.Errorf("Run with nothing to build and no builders = %v", err)
	}
	if err := Run(context.Background(), p, RunOptions{}); err == nil {
		t.Error("Run without Images succeeded")
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := fake.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	b := BuilderFunc(func(ctx context.Context, s Step) error {
		n++
		engine.AddImage(runtime.Image{RepoTags: []string{s.Image}, Labels: s.Labels()})
		cancel()
		return nil
	})
	err := Run(ctx, p, RunOptions{Images: engine, Builders: allKinds(b)})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("Run = %v after %d builds, want context.Canceled after 1", err, n)
	}
}
