package bootstrap

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
	"github.com/capd-e2e/capd-e2e/internal/testengine"
	"github.com/capd-e2e/capd-e2e/internal/testimage"
)

func TestWaitPodNetworkNamesTheNodesThatFailed(t *testing.T) {
	f := fake.New()
	for _, n := range []string{"mgmt-control-plane", "mgmt-worker"} {
		f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: n}})
	}
	var (
		mu    sync.Mutex
		tries []string
	)
	f.SetExec(func(_ context.Context, c string, o runtime.ExecOptions) (runtime.ExecResult, error) {
		script, _ := io.ReadAll(o.Stdin)
		if strings.Join(o.Cmd[:2], " ") != "sh -s" || string(script) != podNetworkScript {
			t.Errorf("node %s: ran %q with stdin %q, want sh -s and the script", c, o.Cmd, script)
		}
		mu.Lock()
		tries = append(tries, o.Cmd[2])
		mu.Unlock()
		if c == "mgmt-worker" {
			_, _ = io.WriteString(o.Stdout, "no CNI configuration that gives pods an address; /etc/cni/net.d holds:\n")
			return runtime.ExecResult{ExitCode: 1}, nil
		}
		return runtime.ExecResult{}, nil
	})
	err := WaitPodNetwork(context.Background(), f, []string{"mgmt-control-plane", "mgmt-worker"}, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "node mgmt-worker, after 2s: no CNI configuration") || strings.Contains(err.Error(), "mgmt-control-plane") {
		t.Errorf("err = %v, want one naming mgmt-worker only", err)
	}
	if strings.Join(tries, ",") != "20,20" {
		t.Errorf("tries = %q, want 20 per node (2 s at 100 ms)", tries)
	}
	if err := WaitPodNetwork(context.Background(), f, []string{"mgmt-control-plane"}, 0); err == nil || !strings.Contains(err.Error(), "timeout 0s is not positive") {
		t.Errorf("timeout 0: err = %v", err)
	}
}

// TestIntegrationWaitPodNetwork runs the script in a real container (the
// busybox test image), with the CNI configurations a node goes through.
func TestIntegrationWaitPodNetwork(t *testing.T) {
	r := testengine.Runtime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref, err := testimage.Ensure(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	runID := runtime.NewRunID()
	name := "capd-e2e-it-" + runID + "-cni"
	if _, err := r.RunContainer(ctx, runtime.ContainerSpec{Name: name, Image: ref, Labels: runtime.RunLabels(runID, "integration-test", nil)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.RemoveContainer(ctx, name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	write := func(file, content string) {
		t.Helper()
		res, err := r.Exec(ctx, name, runtime.ExecOptions{
			Cmd:   []string{"sh", "-c", `mkdir -p /etc/cni/net.d && cat >"/etc/cni/net.d/$1"`, "sh", file},
			Stdin: strings.NewReader(content),
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("write %s: %v, exit %d", file, err, res.ExitCode)
		}
	}
	const (
		// kube-router's, as installed and once it knows the node's range.
		noRange   = `{"plugins":[{"type":"bridge","ipam":{"type":"host-local"}}]}`
		withRange = `{"plugins":[{"type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.0.0/24"}]]}}]}`
		otherIPAM = `{"plugins":[{"type":"calico","ipam":{"type":"calico-ipam"}}]}`
	)
	for _, step := range []struct {
		name, file, content string
		ready               bool
		says                string
	}{
		{"no configuration", "", "", false, "/etc/cni/net.d holds:"},
		{"host-local without a range", "10-kuberouter.conflist", noRange, false, `"type":"host-local"}`},
		{"the range written", "10-kuberouter.conflist", withRange, true, ""},
		{"an earlier file without a range is the one used", "05-other.conflist", noRange, false, "05-other.conflist"},
		{"an IPAM that is not host-local", "05-other.conflist", otherIPAM, true, ""},
	} {
		if step.file != "" {
			write(step.file, step.content)
		}
		start := time.Now()
		err := WaitPodNetwork(ctx, r, []string{name}, 500*time.Millisecond)
		took := time.Since(start)
		switch {
		case step.ready && err != nil:
			t.Errorf("%s: %v, want ready", step.name, err)
		case !step.ready && (err == nil || !strings.Contains(err.Error(), step.says) || !strings.Contains(err.Error(), "node "+name)):
			t.Errorf("%s: err = %v, want one naming the node and saying %q", step.name, err, step.says)
		case !step.ready && took < 500*time.Millisecond:
			t.Errorf("%s: gave up after %s, before its 500ms", step.name, took)
		}
	}
}
