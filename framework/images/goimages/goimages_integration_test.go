//go:build images

package goimages_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/images/gobuild"
	"github.com/capd-e2e/capd-e2e/framework/images/goimages"
	"github.com/capd-e2e/capd-e2e/framework/images/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/internal/testengine"
)

func newRuntime(t *testing.T) *moby.Runtime {
	return testengine.Runtime(t)
}

// runOnce runs image with the given entrypoint and arguments, waits for it
// to exit and returns its combined output.
func runOnce(t *testing.T, rt *moby.Runtime, image string, entrypoint []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runID := runtime.NewRunID()
	id, err := rt.RunContainer(ctx, runtime.ContainerSpec{
		Name:       "capd-e2e-it-goimages-" + runID,
		Image:      image,
		Entrypoint: entrypoint,
		Cmd:        args,
		Labels:     runtime.RunLabels(runID, "integration-test", nil),
	})
	if err != nil {
		t.Fatalf("run %s: %v", image, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.RemoveContainer(ctx, id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	code, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", image, err)
	}
	var out bytes.Buffer
	if err := rt.Logs(ctx, id, &out, &out); err != nil {
		t.Fatalf("logs of %s: %v", image, err)
	}
	return out.String(), code
}

// TestIntegrationPause builds a pause image under a test tag and checks the
// binary runs and reports the version it was compiled with.
func TestIntegrationPause(t *testing.T) {
	rt := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cache, err := gobuild.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	b := &goimages.Builders{Images: rt, Go: &gobuild.Builder{CacheDir: cache}}
	builders := map[plan.Kind]plan.Builder{}
	b.Register(builders)
	ref := "capd-e2e.local/it-pause:" + runtime.NewRunID()
	p, err := plan.FromSteps([]plan.Step{{ID: "pause", Kind: plan.KindPause, Image: ref, Inputs: map[string]string{
		plan.InputVersion: "3.10.2", plan.InputModule: "k8s.io/kubernetes", plan.InputSource: "v1.36.3",
	}}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })
	if err := plan.Run(ctx, p, plan.RunOptions{Images: rt, Builders: builders}); err != nil {
		t.Fatal(err)
	}
	out, code := runOnce(t, rt, ref, nil, "-v")
	if code != 0 || !strings.Contains(out, "v3.10.2-v1.36.3") {
		t.Fatalf("pause -v: exit %d, output %q", code, out)
	}
}

// TestIntegrationBuiltImages runs every Go-built image of config/e2e.yaml
// that `make images` has built and checks it reports the configured
// version. Images not built yet are skipped, naming the step.
func TestIntegrationBuiltImages(t *testing.T) {
	rt := newRuntime(t)
	cfg, err := config.Load(filepath.Join("..", "..", "..", "config", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The config builds the cloud-controller-manager from this repository
	// (a local directory): the plan needs its sources hashed, as
	// capd-e2e-images does.
	cacheDir, err := gobuild.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	gob := &gobuild.Builder{CacheDir: cacheDir}
	p, err := plan.New(cfg, plan.Options{SourceHashes: func(dir string, pkgs, tags []string) (map[string]plan.SourceInfo, error) {
		h, err := gob.SourceHashes(context.Background(), gobuild.LocalTarget{Dir: dir, Packages: pkgs, Tags: tags})
		out := make(map[string]plan.SourceInfo, len(h))
		for k, v := range h {
			out[k] = plan.SourceInfo{ImportPath: v.ImportPath, Hash: v.Hash}
		}
		return out, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Steps() {
		var entrypoint, args []string
		var want string
		anyExit := false
		v := s.Inputs[plan.InputVersion]
		switch s.Kind {
		case plan.KindKubeComponent:
			entrypoint, args, want = []string{s.Inputs[plan.InputComponent]}, []string{"--version"}, "Kubernetes "+v
		case plan.KindEtcd:
			entrypoint, args, want = []string{"etcd"}, []string{"--version"}, "etcd Version: "+strings.TrimPrefix(v, "v")
		case plan.KindCoreDNS:
			entrypoint, args, want = nil, []string{"-version"}, "CoreDNS-"+strings.TrimPrefix(v, "v")
		case plan.KindKubeRouter:
			entrypoint, args, want = nil, []string{"--version"}, v
		case plan.KindClusterAPI:
			// The managers have no --version: they log their version, then
			// fail to find a cluster.
			entrypoint, args, want, anyExit = nil, nil, "Version: "+v, true
		default:
			continue
		}
		t.Run(s.ID, func(t *testing.T) {
			if _, err := rt.InspectImage(context.Background(), s.Image); errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("%s is not built: run `capd-e2e-images -only %s`", s.Image, s.ID)
			}
			out, code := runOnce(t, rt, s.Image, entrypoint, args...)
			if (code != 0 && !anyExit) || !strings.Contains(out, want) {
				t.Fatalf("%s %v: exit %d, want %q in output:\n%s", s.Image, args, code, want, out)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, want) {
					t.Logf("%s: %s", s.Image, strings.TrimSpace(line))
					break
				}
			}
		})
	}
}
