//go:build images

package goimages_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/factory/buildspec"
	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/goimages"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

func newRuntime(t *testing.T) *moby.Runtime {
	return runtimetest.Engine(t)
}

// runOnce runs image with the given entrypoint and arguments, waits for it
// to exit and returns its combined output, its exit code and the container's
// ID (removed when the test ends).
func runOnce(t *testing.T, rt *moby.Runtime, image string, entrypoint []string, args ...string) (string, int, string) {
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
	return out.String(), code, id
}

// fileFrom copies the regular file at path out of container id.
func fileFrom(t *testing.T, rt *moby.Runtime, id, path string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := rt.CopyFrom(ctx, id, path)
	if err != nil {
		t.Fatalf("copy %s: %v", path, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("copy %s: no regular file in the archive: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("copy %s: %v", path, err)
			}
			return b
		}
	}
}

// checkTags fails unless bin was built with the build tags want (its
// project's release tags) and, if noTrace, without golang.org/x/net/trace,
// whose absence is what grpcnotrace is for in Kubernetes. (CoreDNS v1.14.6
// still links it through github.com/mwitkow/go-conntrack.) Function names
// stay in a stripped binary's pclntab, so a linked package shows as its
// import path.
func checkTags(t *testing.T, name string, bin []byte, want []string, noTrace bool) {
	t.Helper()
	info, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got := ""
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			got = s.Value
		}
	}
	if got != strings.Join(want, ",") {
		t.Errorf("%s: built with -tags=%q, want %q", name, got, strings.Join(want, ","))
	}
	trace := bytes.Contains(bin, []byte("golang.org/x/net/trace."))
	if noTrace && trace {
		t.Errorf("%s: golang.org/x/net/trace is linked in", name)
	}
	t.Logf("%s: -tags=%s, %d bytes, golang.org/x/net/trace linked: %t", name, got, len(bin), trace)
}

// buildStep builds s alone with this package's builders, under a test tag
// ("capd-e2e.local/it-<step>:<run id>", removed when the test ends), and
// returns the tag.
func buildStep(ctx context.Context, t *testing.T, rt *moby.Runtime, s plan.Step) string {
	t.Helper()
	cache, err := gomod.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	b := &goimages.Builders{Images: rt, Go: &gobuild.Builder{CacheDir: cache}, TempDir: t.TempDir()}
	builders := map[plan.Kind]plan.Builder{}
	b.Register(builders)
	s.Image = "capd-e2e.local/it-" + s.ID + ":" + runtime.NewRunID()
	p, err := plan.FromSteps([]plan.Step{s}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), s.Image) })
	if err := plan.Run(ctx, p, plan.RunOptions{Images: rt, Builders: builders}); err != nil {
		t.Fatal(err)
	}
	return s.Image
}

// TestIntegrationPause builds a pause image under a test tag and checks the
// binary runs and reports the version it was compiled with.
func TestIntegrationPause(t *testing.T) {
	rt := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ref := buildStep(ctx, t, rt, plan.Step{ID: "pause", Kind: plan.KindPause, Inputs: map[string]string{
		plan.InputVersion: "3.10.2", plan.InputModule: "k8s.io/kubernetes", plan.InputSource: "v1.36.3",
	}})
	out, code, _ := runOnce(t, rt, ref, nil, "-v")
	if code != 0 || !strings.Contains(out, "v3.10.2-v1.36.3") {
		t.Fatalf("pause -v: exit %d, output %q", code, out)
	}
}

// TestIntegrationBusyBox builds the conformance tests' busybox image under
// a test tag, from BusyBox's release as Debian's archive serves it, and
// checks what the tests rely on: its sh passes a variable whose name is
// not a shell identifier on to its children (Debian's busybox drops it),
// and the applets the tests run are there.
func TestIntegrationBusyBox(t *testing.T) {
	rt := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg, err := buildspec.LoadFile(filepath.Join("..", "..", "config", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ref := buildStep(ctx, t, rt, plan.Step{ID: "busybox", Kind: plan.KindTestImage, Inputs: map[string]string{
		plan.InputName: buildspec.TestImageBusyBox, plan.InputTag: "1.37.0-2", plan.InputModule: "k8s.io/kubernetes", plan.InputVersion: "v1.37.2",
		plan.InputSource: plan.BusyBoxRelease("1.37.0-2"), plan.InputMirror: cfg.Debian.Mirror,
	}})
	out, code, _ := runOnce(t, rt, ref, []string{"/bin/env", "data-1=value-1", "sh", "-c", "env; wget --help 2>&1 | head -n 1; nslookup 2>&1 | head -n 1"})
	if code != 0 || !strings.Contains("\n"+out, "\ndata-1=value-1\n") || !strings.Contains(out, "BusyBox v1.37.0") {
		t.Fatalf("sh -c env with data-1 set: exit %d, output:\n%s", code, out)
	}
}

// TestIntegrationBuiltImages runs every Go-built image of config/e2e.yaml
// that `make images` has built and checks it reports the configured
// version. Images not built yet are skipped, naming the step.
func TestIntegrationBuiltImages(t *testing.T) {
	rt := newRuntime(t)
	cfg, err := buildspec.LoadFile(filepath.Join("..", "..", "config", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The config builds the cloud-controller-manager from this repository
	// (a local directory): the plan needs its sources hashed, as
	// `capd-e2e images` does.
	cacheDir, err := gomod.CacheDir()
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
		case plan.KindTestImage:
			// kitten and nautilus: Alpine, agnhost and their files (the
			// ImageVolume test reads os-release and data.json).
			name := s.Inputs[plan.InputName]
			if name != buildspec.TestImageKitten && name != buildspec.TestImageNautilus {
				continue
			}
			entrypoint = []string{"/bin/sh", "-c"}
			args = []string{"grep '^NAME=' /etc/os-release && grep -q " + name + ".jpg /data.json && test -s /" + name + ".jpg && /agnhost --help >/dev/null && echo " + name + "-ok"}
			want = "NAME=\"Alpine Linux\""
		default:
			continue
		}
		t.Run(s.ID, func(t *testing.T) {
			if _, err := rt.InspectImage(context.Background(), s.Image); errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("%s is not built: run `capd-e2e images -only %s`", s.Image, s.ID)
			}
			out, code, id := runOnce(t, rt, s.Image, entrypoint, args...)
			if (code != 0 && !anyExit) || !strings.Contains(out, want) {
				t.Fatalf("%s %v: exit %d, want %q in output:\n%s", s.Image, args, code, want, out)
			}
			switch s.Kind {
			case plan.KindKubeComponent:
				comp := s.Inputs[plan.InputComponent]
				checkTags(t, comp, fileFrom(t, rt, id, "/usr/local/bin/"+comp), gobuild.KubernetesTags, true)
			case plan.KindCoreDNS:
				checkTags(t, "coredns", fileFrom(t, rt, id, "/coredns"), gobuild.CoreDNSTags, false)
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
