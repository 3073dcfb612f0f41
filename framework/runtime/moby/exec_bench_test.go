package moby_test

import (
	"context"
	"os/exec"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// BenchmarkExec runs one trivial command in one container, through this
// runtime and, as the baseline the harness replaces, through the docker CLI
// (the only place in this repository that runs it). Besides ns/op (a mean)
// it reports the median in ms as "ms-median", in two regimes (regimes):
// BenchmarkExec/idle/runtime against BenchmarkExec/idle/docker-cli, and the
// same under load.
//
// It also reports CPU per exec: "client-cpu-ms/op" is this process's for
// the runtime and the CLI process's own for the CLI; "daemon-cpu-ms/op"
// (dockerd, containerd) and "shim-runc-cpu-ms/op" (the container's shim and
// the runc processes it starts per exec) are the engine's, which both pay
// alike: see BenchmarkExecPhases for where the runtime's time goes.
func BenchmarkExec(b *testing.B) { regimes(b, benchExec) }

// regimes runs f on an idle machine ("idle") and with every CPU kept busy
// by a CPU-bound shell loop per CPU ("loaded"), processes started and
// killed here: exec latency when the engine's host is busy, as during a
// cold `make images` or three clusters at once.
func regimes(b *testing.B, f func(*testing.B)) {
	b.Run("idle", f)
	b.Run("loaded", func(b *testing.B) {
		for range goruntime.NumCPU() {
			burner := exec.Command("sh", "-c", "while :; do :; done")
			if err := burner.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				if err := burner.Process.Kill(); err != nil {
					b.Errorf("stop the load: %v", err)
				}
				_ = burner.Wait() // ends by our SIGKILL: an error
			})
		}
		f(b)
	})
}

func benchExec(b *testing.B) {
	r := newRuntime(b)
	name := startTestContainer(b, r, runtime.NewRunID(), nil)
	cmd := []string{"cat", "/etc/hostname"}
	ctx := context.Background()
	d, err := r.InspectContainer(ctx, name)
	if err != nil {
		b.Fatal(err)
	}

	b.Run("runtime", func(b *testing.B) {
		cpu0 := moby.SelfCPU()
		benchMedian(b, d.ID, func() error {
			_, err := runtime.Output(ctx, r, name, cmd...)
			return err
		})
		b.ReportMetric(float64((moby.SelfCPU()-cpu0).Microseconds())/1000/float64(b.N), "client-cpu-ms/op")
	})
	b.Run("docker-cli", func(b *testing.B) {
		if _, err := exec.LookPath("docker"); err != nil {
			b.Skip("docker CLI not installed: no baseline")
		}
		args := append([]string{"exec", name}, cmd...)
		var cpu time.Duration
		benchMedian(b, d.ID, func() error {
			c := exec.CommandContext(ctx, "docker", args...)
			err := c.Run()
			if c.ProcessState != nil {
				cpu += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
			}
			return err
		})
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "client-cpu-ms/op")
	})
}

func benchMedian(b *testing.B, containerID string, op func() error) {
	durations := make([]time.Duration, 0, b.N)
	daemon0, shim0, engineOK := moby.EngineCPU(containerID)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	median := durations[len(durations)/2]
	if len(durations)%2 == 0 {
		median = (durations[len(durations)/2-1] + durations[len(durations)/2]) / 2
	}
	b.ReportMetric(float64(median.Microseconds())/1000, "ms-median")
	if daemon1, shim1, ok := moby.EngineCPU(containerID); ok && engineOK {
		b.ReportMetric(float64((daemon1-daemon0).Microseconds())/1000/float64(b.N), "daemon-cpu-ms/op")
		b.ReportMetric(float64((shim1-shim0).Microseconds())/1000/float64(b.N), "shim-runc-cpu-ms/op")
	}
}
