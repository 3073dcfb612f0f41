package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	kinderrors "sigs.k8s.io/kind/pkg/errors"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestLoadImagesStreamsToEveryNode(t *testing.T) {
	f := fake.New()
	f.AddImage(runtime.Image{ID: "sha256:a", RepoTags: []string{"registry.k8s.io/a:1"}})
	f.AddImage(runtime.Image{ID: "sha256:b", RepoTags: []string{"capd-e2e/b:2"}})
	for _, n := range []string{"mgmt-control-plane", "mgmt-worker"} {
		f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: n}})
	}
	var mu sync.Mutex
	imported := map[string]string{}
	f.SetExec(func(_ context.Context, c string, o runtime.ExecOptions) (runtime.ExecResult, error) {
		switch {
		case strings.Join(o.Cmd[:4], " ") == "ctr --namespace=k8s.io images import":
			b, _ := io.ReadAll(o.Stdin)
			mu.Lock()
			imported[c] = string(b)
			mu.Unlock()
		case o.Cmd[3] == "list":
			_, _ = io.WriteString(o.Stdout, "registry.k8s.io/a:1\ndocker.io/capd-e2e/b:2\n")
		}
		return runtime.ExecResult{}, nil
	})
	err := LoadImages(context.Background(), f, []string{"mgmt-control-plane", "mgmt-worker"}, []string{"registry.k8s.io/a:1", "capd-e2e/b:2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"mgmt-control-plane", "mgmt-worker"} {
		if imported[n] != "registry.k8s.io/a:1\ncapd-e2e/b:2" {
			t.Errorf("node %s got archive %q", n, imported[n])
		}
	}
}

func TestLoadImagesReportsFailuresPerNode(t *testing.T) {
	f := fake.New()
	f.AddImage(runtime.Image{ID: "sha256:a", RepoTags: []string{"a.io/a:1"}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "good"}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "bad"}})
	f.SetExec(func(_ context.Context, c string, o runtime.ExecOptions) (runtime.ExecResult, error) {
		if o.Cmd[3] == "import" {
			_, _ = io.Copy(io.Discard, o.Stdin)
			if c == "bad" {
				_, _ = io.WriteString(o.Stderr, "ctr: failed to ingest: no space left on device")
				return runtime.ExecResult{ExitCode: 1}, nil
			}
			return runtime.ExecResult{}, nil
		}
		_, _ = io.WriteString(o.Stdout, "a.io/a:1\n")
		return runtime.ExecResult{}, nil
	})
	err := LoadImages(context.Background(), f, []string{"good", "bad"}, []string{"a.io/a:1"})
	if err == nil || !strings.Contains(err.Error(), `node "bad"`) || !strings.Contains(err.Error(), "no space left") || strings.Contains(err.Error(), `node "good"`) {
		t.Fatalf("error = %v", err)
	}

	if err := LoadImages(context.Background(), f, []string{"good"}, []string{"missing.io/x:1"}); err == nil || !strings.Contains(err.Error(), "missing.io/x:1") {
		t.Errorf("missing image: %v", err)
	}
}

func TestLoadImagesNoticesSilentImportFailure(t *testing.T) {
	f := fake.New()
	f.AddImage(runtime.Image{ID: "sha256:a", RepoTags: []string{"a.io/a:1"}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "n"}})
	f.SetExec(func(_ context.Context, _ string, o runtime.ExecOptions) (runtime.ExecResult, error) {
		if o.Stdin != nil {
			_, _ = io.Copy(io.Discard, o.Stdin)
		}
		return runtime.ExecResult{}, nil // imports "fine", lists nothing
	})
	err := LoadImages(context.Background(), f, []string{"n"}, []string{"a.io/a:1"})
	if err == nil || !strings.Contains(err.Error(), "not in containerd") {
		t.Errorf("error = %v", err)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"busybox:1":                "docker.io/library/busybox:1",
		"kindest/node:v1":          "docker.io/kindest/node:v1",
		"registry.k8s.io/pause:3":  "registry.k8s.io/pause:3",
		"localhost/x:1":            "localhost/x:1",
		"capd-e2e.local/testimg:1": "capd-e2e.local/testimg:1",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKindOptionsValidate(t *testing.T) {
	err := KindOptions{Workers: -1, DualStack: true}.validate()
	for _, field := range []string{"Name", "NodeImage", "Runtime", "Workers", "CNIManifest"} {
		if err == nil || !strings.Contains(err.Error(), "KindOptions."+field) {
			t.Errorf("validate() = %v, want it to name %s", err, field)
		}
	}
	if err := (KindOptions{Name: "x", NodeImage: "y", Runtime: fake.New(), DualStack: true, CNIManifest: []byte("kind: DaemonSet")}).validate(); err != nil {
		t.Errorf("a dual-stack cluster with its CNI: %v", err)
	}
	if _, err := CreateKind(context.Background(), KindOptions{Name: "x", NodeImage: "kindest/node:v0", Runtime: fake.New()}); err == nil || !strings.Contains(err.Error(), "kindest/node:v0") {
		t.Errorf("missing node image: %v", err)
	}
}

func TestKindProviderFollowsTheEngine(t *testing.T) {
	found := func(string) (string, error) { return "/usr/bin/podman", nil }
	missing := func(string) (string, error) { return "", errors.New("executable file not found in $PATH") }
	docker := runtime.EngineInfo{Endpoint: "unix:///var/run/docker.sock", Version: "29.1.3"}
	podman := runtime.EngineInfo{Endpoint: "unix:///run/podman/podman.sock", Version: "4.3.1", Podman: true}

	if p, err := kindProvider(docker, missing); err != nil || p == nil {
		t.Errorf("Docker: %v, %v; want kind's Docker provider, no podman CLI needed", p, err)
	}
	if p, err := kindProvider(podman, found); err != nil || p == nil {
		t.Errorf("Podman: %v, %v; want kind's Podman provider", p, err)
	}
	_, err := kindProvider(podman, missing)
	if err == nil || !strings.Contains(err.Error(), "podman CLI") || !strings.Contains(err.Error(), "Podman 4.3.1") {
		t.Errorf("Podman without its CLI: %v; want an error naming the missing podman CLI and the engine", err)
	}
	rootless := podman
	rootless.Rootless = true
	if _, err := kindProvider(rootless, found); err == nil || !strings.Contains(err.Error(), "rootless") {
		t.Errorf("rootless Podman: %v; want an error saying rootless is not supported", err)
	}
}

func TestCreateKindRefusesAnEngineWithoutSocketToMount(t *testing.T) {
	rt := fake.New()
	rt.AddImage(runtime.Image{ID: "sha256:n", RepoTags: []string{"kindest/node:v0"}})
	rt.InfoResult.Endpoint = "tcp://10.0.0.1:2376"
	_, err := CreateKind(context.Background(), KindOptions{Name: "x", NodeImage: "kindest/node:v0", Runtime: rt, MountDockerSocket: true})
	if err == nil || !strings.Contains(err.Error(), "tcp://10.0.0.1:2376") {
		t.Errorf("CreateKind on a tcp engine with MountDockerSocket = %v; want an error naming the endpoint", err)
	}
}

func TestCommandOutputTail(t *testing.T) {
	var out strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&out, "line %d\n", i)
	}
	out.WriteString("[wait-control-plane] timed out waiting for the condition\n")
	// As kind returns it: its RunError wrapped by its errors package,
	// then by ours.
	run := &kindexec.RunError{Command: []string{"docker", "exec", "kubeadm", "init"}, Output: []byte(out.String()), Inner: errors.New("exit status 1")}
	err := fmt.Errorf("create: %w", kinderrors.Wrap(run, "failed to init node with kubeadm"))
	got := commandOutputTail(err)
	if !strings.HasPrefix(got, "\nthe command's last lines of output:\nline 7\n") ||
		!strings.HasSuffix(got, "line 20\n[wait-control-plane] timed out waiting for the condition") {
		t.Errorf("commandOutputTail = %q", got)
	}
	if n := strings.Count(got, "\n"); n != outputTailLines+1 {
		t.Errorf("%d lines, want %d", n, outputTailLines+1)
	}
	for _, err := range []error{errors.New("plain"), &kindexec.RunError{Output: []byte(" \n")}} {
		if got := commandOutputTail(err); got != "" {
			t.Errorf("commandOutputTail(%v) = %q, want none", err, got)
		}
	}
}
