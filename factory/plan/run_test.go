package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
		KindKubeRouter, KindNode, KindHAProxy, KindClusterAPI, KindCertManagerSubstitute, KindGoImage, KindConformance, KindTestImage} {
		m[k] = b
	}
	return m
}

func TestRunBuildsWhatChangedThenNothing(t *testing.T) {
	engine := engineWith(newPlan(t, loadConfig(t), testOpts))
	c := loadConfig(t)
	k := &c.Kubernetes[1]
	k.Etcd.Version, k.Etcd.Image = "v3.7.1", "registry.k8s.io/etcd:3.7.1-0"
	c.Config.Variables[config.VarEtcdVersionUpgradeTo] = "3.7.1-0"
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
	// The other targets are current; of node/v1.37.2's dependencies only
	// the new etcd is built; node/v1.36.3's are not needed.
	for _, re := range []string{
		`(?m)^images: 2 to build$`,
		`(?m)^\[\d+/59\] etcd/v3\.7\.1: building registry\.k8s\.io/etcd:3\.7\.1-0 \(not in the engine\)$`,
		`(?m)^\[\d+/59\] node/v1\.37\.2: building kindest/node:v1\.37\.2 \(inputs changed \(image [0-9a-f]{12}, plan [0-9a-f]{12}\)\)$`,
		`(?m)^\[\d+/59\] node/v1\.37\.2: built in \d+(\.\d)?m?s \(cpu \d+(\.\d)?m?s\)$`,
		`(?m)^\[1/59\] \S+: up to date \(\S+\)$`,
		`(?m)^\[\d+/59\] kube-apiserver/v1\.36\.3: not needed \(up to date\)$`,
		`(?m)^images: 2 built, 0 pulled, 34 up to date, 23 not needed, 0 failed or skipped, in \S+$`,
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
	if len(rec.built) != 0 || !strings.Contains(out.String(), "images: 0 built, 0 pulled, 27 up to date, 32 not needed") {
		t.Errorf("second run built %v:\n%s", rec.built, out.String())
	}
}

func TestRunBuildsOnlyWhatTargetsNeed(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := engineWith(p)
	// An intermediate image gone while its dependents are current: not
	// rebuilt, nothing needs it.
	if err := engine.RemoveImage(context.Background(), "registry.k8s.io/kube-apiserver:v1.36.3"); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{engine: engine, label: true}
	if err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec)}); err != nil {
		t.Fatal(err)
	}
	if len(rec.built) != 0 {
		t.Errorf("built %v, want nothing", rec.built)
	}
	// Asked for by name, it is built.
	if err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Targets: []string{"kube-apiserver/v1.36.3"}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.built, []string{"kube-apiserver/v1.36.3"}) {
		t.Errorf("built %v, want kube-apiserver/v1.36.3", rec.built)
	}
	if err := Run(context.Background(), p, RunOptions{Images: engine, Targets: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `target "nope": no such step`) {
		t.Errorf("Run with an unknown target = %v", err)
	}
}

// registry is a Puller and Publisher over a fake engine's registry, the
// way package registry's are over a real one.
type registry struct{ engine *fake.Runtime }

func (r registry) Pull(ctx context.Context, ref string) (string, error) {
	return "mirror/" + ref, r.engine.PullImage(ctx, ref)
}

func (r registry) Publish(ctx context.Context, ref string) (string, error) {
	return "mirror/" + ref, r.engine.PushImage(ctx, ref)
}

func TestRunPullsWhatThePolicyAllows(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := fake.New()
	// The registry has the published node images (without our label, as
	// kind publishes them) and a stale build of the CAPD manager (a CI
	// cache filled by an older plan).
	for _, ref := range []string{"kindest/node:v1.34.4", "kindest/node:v1.35.4", "kindest/node:v1.36.3", "kindest/node:v1.37.2"} {
		engine.AddRegistryImage(ref, runtime.Image{ID: "sha256:published-" + ref})
	}
	engine.AddRegistryImage("registry.k8s.io/cluster-api/capd-manager:v1.14.2",
		runtime.Image{Labels: map[string]string{LabelInputsHash: "0123456789abcdef"}})
	rec := &recorder{engine: engine, label: true}
	policy := func(s Step) string {
		if s.Published {
			return config.PolicyPullElseBuild
		}
		return config.PolicyBuild
	}
	var out bytes.Buffer
	err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Progress: &out,
		Puller: registry{engine}, Policy: policy, Publisher: registry{engine}})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	// Pulled node images need no Kubernetes build at all; the stale CAPD
	// manager is built; unpublished targets are built.
	for _, id := range []string{"node/v1.36.3", "node/v1.37.2", "kube-apiserver/v1.36.3", "etcd/v3.6.8", "kind-base", "rootfs/node"} {
		if slices.Contains(rec.built, id) {
			t.Errorf("%s was built; the node images were pulled", id)
		}
	}
	for _, id := range []string{IDCAPD, IDCertManagerSubstitute, "haproxy", "rootfs/haproxy"} {
		if !slices.Contains(rec.built, id) {
			t.Errorf("%s was not built (built %v)", id, rec.built)
		}
	}
	for _, re := range []string{
		`(?m)^\[\d+/59\] node/v1\.36\.3: pulled kindest/node:v1\.36\.3 from mirror/kindest/node:v1\.36\.3 in \S+$`,
		`(?m)^\[\d+/59\] cluster-api/docker: not pulled \(mirror/registry\.k8s\.io/cluster-api/capd-manager:v1\.14\.2 is stale \(its e2e\.capd\.x-k8s\.io/inputs-hash is 0123456789ab, the plan's [0-9a-f]{12}\)\): building$`,
		`(?m)^\[\d+/59\] haproxy: not pulled \(pull image "kindest/haproxy:v20230606-42a2262b": manifest unknown: not found\): building$`,
		`(?m)^images: \d+ built, 4 pulled, 0 up to date, \d+ not needed, 0 failed or skipped, in \S+$`,
		`(?m)^\[\d+/59\] cert-manager-substitute: published as mirror/capd-e2e/cert-manager-substitute:v1\.21\.2$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("progress lacks %s:\n%s", re, out.String())
		}
	}
	if got := engine.RegistryImages(); !slices.Contains(got, "capd-e2e/cert-manager-substitute:v1.21.2") || slices.Contains(got, "registry.k8s.io/kube-apiserver:v1.36.3") {
		t.Errorf("published %v: want what the run provided, not what it did not need", got)
	}

	// A second run finds the pulled images current (they carry no label:
	// published images never do) and builds nothing.
	rec.built = nil
	if err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Puller: registry{engine}, Policy: policy}); err != nil {
		t.Fatal(err)
	}
	if len(rec.built) != 0 {
		t.Errorf("second run built %v", rec.built)
	}

	// Policy pull fails when the registry has no such image, and builds
	// nothing for it.
	engine = fake.New()
	rec = &recorder{engine: engine, label: true}
	pull := func(Step) string { return config.PolicyPull }
	err = Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Puller: registry{engine}, Policy: pull, Targets: []string{"haproxy"}})
	if err == nil || !strings.Contains(err.Error(), `pull image "kindest/haproxy:v20230606-42a2262b" (step haproxy, policy pull)`) || len(rec.built) != 0 {
		t.Errorf("Run with policy pull and an empty registry = %v, built %v", err, rec.built)
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
	if !strings.Contains(out.String(), "etcd/v3.7.0: failed after") || !strings.Contains(out.String(), ", 2 failed or skipped") {
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

// concurrency is a Builder that checks, as each build starts, what Run
// promises about steps building at once, and records the most at once.
type concurrency struct {
	t      *testing.T
	engine *fake.Runtime
	budget int64
	key    func(Step) string

	mu      sync.Mutex
	running map[string]Step
	most    int
	order   []string
}

func (c *concurrency) Build(ctx context.Context, s Step) error {
	c.mu.Lock()
	for _, d := range s.Deps {
		if _, err := c.engine.InspectImage(ctx, mustStep(c.t, s, d)); err != nil {
			c.t.Errorf("%s started before its dependency %s was in the engine: %v", s.ID, d, err)
		}
	}
	var mem int64
	for _, r := range c.running {
		mem += DefaultCost(r).Memory
		if k := c.key(r); k != "" && k == c.key(s) {
			c.t.Errorf("%s and %s, both %q, build at once", s.ID, r.ID, k)
		}
	}
	if len(c.running) > 0 && mem+DefaultCost(s).Memory > c.budget {
		c.t.Errorf("%s started with %v running: over the budget", s.ID, slices.Collect(maps.Keys(c.running)))
	}
	c.running[s.ID] = s
	c.most = max(c.most, len(c.running))
	c.order = append(c.order, s.ID)
	c.mu.Unlock()

	time.Sleep(2 * time.Millisecond) // lets other builds start meanwhile
	c.engine.AddImage(runtime.Image{ID: "sha256:" + s.Hash, RepoTags: []string{s.Image}, Labels: s.Labels()})
	c.mu.Lock()
	delete(c.running, s.ID)
	c.mu.Unlock()
	return nil
}

var stepImages sync.Map // step ID -> image, filled by mustStep's callers' plans

func mustStep(t *testing.T, s Step, dep string) string {
	img, ok := stepImages.Load(dep)
	if !ok {
		t.Fatalf("%s: dependency %s unknown", s.ID, dep)
	}
	return img.(string)
}

func TestRunBuildsInParallelWithinLimits(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	for _, s := range p.Steps() {
		stepImages.Store(s.ID, s.Image)
	}
	key := func(s Step) string {
		if s.Kind == KindKubeComponent || s.Kind == KindNode {
			return "kubernetes@" + s.Inputs[InputVersion]
		}
		return ""
	}
	for _, tc := range []struct {
		jobs   int
		budget int64
	}{{jobs: 2, budget: 5 * gib}, {jobs: 3, budget: 6 * gib}, {jobs: 4, budget: 100 * gib}} {
		engine := fake.New()
		c := &concurrency{t: t, engine: engine, budget: tc.budget, key: key, running: map[string]Step{}}
		if tc.budget == 100*gib {
			c.budget = 1 << 62
		}
		var out bytes.Buffer
		err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(c), Progress: &out,
			Jobs: tc.jobs, MemoryBudget: tc.budget, Cost: DefaultCost, Exclusive: key})
		if err != nil {
			t.Fatalf("jobs %d: Run: %v\n%s", tc.jobs, err, out.String())
		}
		if len(c.order) != len(p.Steps()) {
			t.Errorf("jobs %d: built %d steps, want %d", tc.jobs, len(c.order), len(p.Steps()))
		}
		if c.most != tc.jobs {
			t.Errorf("jobs %d: at most %d built at once", tc.jobs, c.most)
		}
		// The longest path (a Kubernetes build, then its node image)
		// starts first.
		first := regexp.MustCompile(`(?m)^\[\d+/\d+\] (\S+): building `).FindStringSubmatch(out.String())
		if first == nil || !strings.HasPrefix(first[1], "kube-apiserver/") {
			t.Errorf("jobs %d: first step started %v, want a Kubernetes build", tc.jobs, first)
		}
		if !strings.Contains(out.String(), fmt.Sprintf("up to %d at once", tc.jobs)) {
			t.Errorf("jobs %d: progress lacks the schedule:\n%s", tc.jobs, out.String())
		}
	}
}

func TestRunParallelFailureSkipsDependents(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	engine := fake.New()
	boom := errors.New("debootstrap: exit status 1")
	rec := &recorder{engine: engine, label: true, fail: map[string]error{RootfsID("node"): boom}}
	err := Run(context.Background(), p, RunOptions{Images: engine, Builders: allKinds(rec), Jobs: 3, Cost: DefaultCost})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v", err)
	}
	for _, id := range []string{IDKindBase, "node/v1.36.3", "node/v1.37.2"} {
		if slices.Contains(rec.built, id) {
			t.Errorf("%s was built although %s failed", id, RootfsID("node"))
		}
		if !strings.Contains(err.Error(), "(step "+id+"): skipped: dependency ") {
			t.Errorf("Run error does not name %s as skipped:\n%v", id, err)
		}
	}
	if !slices.Contains(rec.built, "kube-apiserver/v1.37.2") || !slices.Contains(rec.built, IDHAProxy) {
		t.Errorf("independent steps were not built: %v", rec.built)
	}
}
