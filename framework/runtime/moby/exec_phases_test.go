package moby_test

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// BenchmarkExecPhases splits an exec into the engine round trips Exec
// makes, to show where its time goes:
//
//	create   POST /containers/{id}/exec               (daemon: records the exec)
//	upgrade  POST /exec/{id}/start, until 101 Upgrade (new connection; the
//	         daemon answers before it starts the process)
//	stream   until the output ends                    (daemon → containerd →
//	         shim → runc exec → process runs and exits → streams close)
//	inspect  GET /exec/{id}/json                      (exit code)
//
// Each phase's median is reported in ms, with the CPU this process used per
// exec ("client-cpu-ms/op") and the engine's: dockerd and containerd
// ("daemon-cpu-ms/op"), the container's shim with the runc processes it
// reaped ("shim-runc-cpu-ms/op"). The engine's figures include whatever
// else it did meanwhile: run on an otherwise quiet engine.
// The docker CLI makes the same four calls, plus a ping and a container
// inspect, from a new process each time; BenchmarkExec compares the two.
func BenchmarkExecPhases(b *testing.B) { regimes(b, benchExecPhases) }

func benchExecPhases(b *testing.B) {
	if testing.Short() {
		b.Skip("needs a container engine; skipped under -short")
	}
	r, err := moby.New(moby.Config{})
	if err != nil {
		b.Fatalf("benchmarks need a container engine: %v", err)
	}
	b.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	id := startContainer(b, r)
	cmd := []string{"cat", "/etc/hostname"}

	phases := map[string][]time.Duration{}
	add := func(name string, d time.Duration) { phases[name] = append(phases[name], d) }
	daemon0, shim0, engOK := moby.EngineCPU(id)
	cpu0 := moby.SelfCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		created, err := moby.ClientOf(r).ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		att, err := moby.ClientOf(r).ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := stdcopy.StdCopy(io.Discard, io.Discard, att.Reader); err != nil {
			b.Fatal(err)
		}
		att.Close()
		t3 := time.Now()
		res, err := moby.ClientOf(r).ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		if res.Running {
			b.Fatal("exec still running after its stream ended")
		}
		add("create", t1.Sub(t0))
		add("upgrade", t2.Sub(t1))
		add("stream", t3.Sub(t2))
		add("inspect", t4.Sub(t3))
		add("total", t4.Sub(t0))
	}
	b.StopTimer()
	for _, name := range []string{"create", "upgrade", "stream", "inspect", "total"} {
		b.ReportMetric(ms(median(phases[name])), name+"-ms")
	}
	b.ReportMetric(ms(moby.SelfCPU()-cpu0)/float64(b.N), "client-cpu-ms/op")
	if daemon1, shim1, ok := moby.EngineCPU(id); ok && engOK {
		b.ReportMetric(ms(daemon1-daemon0)/float64(b.N), "daemon-cpu-ms/op")
		b.ReportMetric(ms(shim1-shim0)/float64(b.N), "shim-runc-cpu-ms/op")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// startContainer runs the test image, labelled with a run id, and removes
// it when the benchmark ends. It returns the container's ID.
func startContainer(b *testing.B, r *moby.Runtime) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		b.Fatalf("test image: %v", err)
	}
	runID := runtime.NewRunID()
	id, err := r.RunContainer(ctx, runtime.ContainerSpec{
		Name: "capd-e2e-bench-" + runID, Image: ref, Labels: runtime.RunLabels(runID, "exec-benchmark", nil),
	})
	if err != nil {
		b.Fatalf("run test container: %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.RemoveContainer(ctx, id); err != nil {
			b.Errorf("cleanup: %v", err)
		}
	})
	return id
}
