package fake

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Run with -race: many goroutines use one fake at once.
func TestConcurrentUse(t *testing.T) {
	f := New()
	f.AddImage(runtime.Image{ID: "sha256:1", RepoTags: []string{"img:1"}})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			name := fmt.Sprintf("c%d", i)
			if _, err := f.RunContainer(ctx, runtime.ContainerSpec{Name: name, Image: "img:1", Labels: map[string]string{"run": "x"}}); err != nil {
				t.Error(err)
				return
			}
			if _, err := f.Exec(ctx, name, runtime.ExecOptions{Cmd: []string{"true"}}); err != nil {
				t.Error(err)
			}
			if _, err := f.ListContainers(ctx, runtime.Filter{Labels: map[string]string{"run": "x"}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	list, _ := f.ListContainers(context.Background(), runtime.Filter{Labels: map[string]string{"run": "x"}})
	if len(list) != 20 {
		t.Errorf("%d containers, want 20", len(list))
	}
}

func TestInstancesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.AddContainer(Container{ContainerDetails: runtime.ContainerDetails{Name: "only-in-a"}})
	if _, err := b.InspectContainer(context.Background(), "only-in-a"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("b sees a's container: %v", err)
	}
}

func TestCopyFromAndState(t *testing.T) {
	f := New()
	f.AddContainer(Container{ContainerDetails: runtime.ContainerDetails{Name: "m"}, Files: map[string][]byte{
		"/var/log/pods/ns_p/c/0.log": []byte("line"), "/etc/other": []byte("x"),
	}})
	ctx := context.Background()
	rc, err := f.CopyFrom(ctx, "m", "/var/log/pods")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil || h.Name != "pods/ns_p/c/0.log" {
		t.Fatalf("first entry %v, %v", h, err)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("extra entries: %v", err)
	}
	if _, err := f.CopyFrom(ctx, "m", "/nope"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("missing path: %v", err)
	}
	if err := f.Kill(ctx, "m", ""); err != nil {
		t.Fatal(err)
	}
	if d, err := f.InspectContainer(ctx, "m"); err != nil || d.State.Running || d.State.ExitCode != 137 {
		t.Errorf("after kill: %+v, %v", d.State, err)
	}
	if _, err := f.Exec(ctx, "m", runtime.ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("exec in stopped container: %v", err)
	}
	_ = f.Close()
	if _, err := f.ListContainers(ctx, runtime.Filter{}); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("after Close: %v", err)
	}
}

// FollowLogs writes the output at once and returns when the container
// stops, is removed, or the context ends; never while it runs.
func TestFollowLogs(t *testing.T) {
	f := New()
	ctx := context.Background()
	for _, name := range []string{"killed", "removed", "cancelled"} {
		f.AddContainer(Container{ContainerDetails: runtime.ContainerDetails{Name: name}, Stdout: []byte("out\n"), Stderr: []byte("err\n")})
	}
	follow := func(ctx context.Context, name string) (<-chan error, *strings.Builder, *strings.Builder) {
		done := make(chan error, 1)
		var stdout, stderr strings.Builder
		go func() { done <- f.FollowLogs(ctx, name, &stdout, &stderr) }()
		return done, &stdout, &stderr
	}
	// 50 ms is long enough for a FollowLogs that does not wait to have
	// returned; the test does not depend on it being longer.
	running := func(done <-chan error, name string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("FollowLogs(%s) returned while the container runs: %v", name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	ended := func(done <-chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("FollowLogs did not return")
			return nil
		}
	}

	done, stdout, stderr := follow(ctx, "killed")
	running(done, "killed")
	if err := f.Kill(ctx, "killed", ""); err != nil {
		t.Fatal(err)
	}
	if err := ended(done); err != nil || stdout.String() != "out\n" || stderr.String() != "err\n" {
		t.Errorf("FollowLogs of a killed container = %v, stdout %q, stderr %q", err, stdout, stderr)
	}

	done, _, _ = follow(ctx, "removed")
	running(done, "removed")
	if err := f.RemoveContainer(ctx, "removed"); err != nil {
		t.Fatal(err)
	}
	if err := ended(done); err != nil {
		t.Errorf("FollowLogs of a removed container = %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	done, _, _ = follow(cctx, "cancelled")
	running(done, "cancelled")
	cancel()
	if err := ended(done); !errors.Is(err, context.Canceled) {
		t.Errorf("FollowLogs past its context = %v, want Canceled", err)
	}

	// A stopped container's output ends at once.
	if err := f.FollowLogs(ctx, "killed", nil, nil); err != nil {
		t.Errorf("FollowLogs of a stopped container = %v", err)
	}
	if err := f.FollowLogs(ctx, "nope", nil, nil); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("FollowLogs of no container = %v, want ErrNotFound", err)
	}
}
