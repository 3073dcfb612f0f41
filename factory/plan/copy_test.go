package plan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

// loader is a target engine whose image load stores the images the fake
// source saved (a fake archive lists their refs, one per line).
type loader struct {
	*fake.Runtime
	from    *fake.Runtime
	loadErr error
}

func (l loader) LoadImages(ctx context.Context, archive io.Reader) error {
	if l.loadErr != nil {
		return l.loadErr
	}
	b, err := io.ReadAll(archive)
	if err != nil {
		return err
	}
	for _, ref := range strings.Split(string(b), "\n") {
		img, err := l.from.InspectImage(ctx, ref)
		if err != nil {
			return err
		}
		l.AddImage(img)
	}
	return nil
}

func TestRunCopiesCurrentImagesFromAnotherEngine(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	// The source engine built everything; one image there is stale (an
	// older plan's CAPD manager) and one is missing (haproxy).
	source := engineWith(p)
	capd, _ := p.Step(IDCAPD)
	source.AddImage(runtime.Image{ID: "sha256:old", RepoTags: []string{capd.Image}, Labels: map[string]string{LabelInputsHash: "0123456789abcdef"}})
	haproxy, _ := p.Step("haproxy")
	if err := source.RemoveImage(context.Background(), haproxy.Image); err != nil {
		t.Fatal(err)
	}
	target := loader{Runtime: fake.New(), from: source}
	rec := &recorder{engine: target.Runtime, label: true}
	var out bytes.Buffer
	err := Run(context.Background(), p, RunOptions{Images: target, Builders: allKinds(rec), Progress: &out,
		Copier: &EngineCopier{From: source, To: target, FromName: "unix:///var/run/docker.sock"}})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	slices.Sort(rec.built)
	if want := []string{IDCAPD, "haproxy"}; !slices.Equal(rec.built, want) {
		t.Errorf("built %v, want only %v (the stale and the missing one; every other target copied)\n%s", rec.built, want, out.String())
	}
	for _, re := range []string{
		`(?m)^\[\d+/59\] node/v1\.36\.3: copied kindest/node:v1\.36\.3 from unix:///var/run/docker\.sock in \S+$`,
		`(?m)^\[\d+/59\] cluster-api/docker: not copied \(registry\.k8s\.io/cluster-api/capd-manager:v1\.14\.2 \(its e2e\.capd\.x-k8s\.io/inputs-hash is "0123456789ab", the plan's [0-9a-f]{12}\): not in the source engine with this inputs hash\)$`,
		`(?m)^\[\d+/59\] haproxy: not copied \(kindest/haproxy:\S+: not in the source engine with this inputs hash\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("progress lacks %s:\n%s", re, out.String())
		}
	}
	if img, err := target.InspectImage(context.Background(), "kindest/node:v1.36.3"); err != nil || img.Labels[LabelInputsHash] == "" {
		t.Errorf("the copied node image in the target: %+v, %v", img, err)
	}
}

func TestRunFailsAStepWhoseCopyBroke(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	source := engineWith(p)
	broken := errors.New("load: unexpected EOF")
	target := loader{Runtime: fake.New(), from: source, loadErr: broken}
	rec := &recorder{engine: target.Runtime, label: true}
	err := Run(context.Background(), p, RunOptions{Images: target, Builders: allKinds(rec), Targets: []string{"haproxy"},
		Copier: &EngineCopier{From: source, To: target, FromName: "src"}})
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), `copy image "kindest/haproxy`) {
		t.Errorf("Run with a broken copy = %v; want the copy's error, naming the image", err)
	}
	if len(rec.built) != 0 {
		t.Errorf("built %v after a failed copy; want nothing (a broken copy is a fault, not a reason to build for an hour)", rec.built)
	}
}
