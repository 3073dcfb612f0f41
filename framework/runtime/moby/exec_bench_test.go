package moby_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// BenchmarkExec runs one trivial command in one container, through this
// runtime and, as the baseline the harness replaces, through the docker CLI
// (the only place in this repository that runs it). Besides ns/op (a mean)
// it reports the median in ms as "ms-median", which scripts/bench-exec.sh
// compares; run it with the load on and off to see both regimes.
func BenchmarkExec(b *testing.B) {
	r := newRuntime(b)
	name := startTestContainer(b, r, runtime.NewRunID(), nil)
	cmd := []string{"cat", "/etc/hostname"}
	ctx := context.Background()

	b.Run("runtime", func(b *testing.B) {
		benchMedian(b, func() error {
			_, err := runtime.Output(ctx, r, name, cmd...)
			return err
		})
	})
	b.Run("docker-cli", func(b *testing.B) {
		if _, err := exec.LookPath("docker"); err != nil {
			b.Skip("docker CLI not installed: no baseline")
		}
		args := append([]string{"exec", name}, cmd...)
		benchMedian(b, func() error {
			return exec.CommandContext(ctx, "docker", args...).Run()
		})
	})
}

func benchMedian(b *testing.B, op func() error) {
	durations := make([]time.Duration, 0, b.N)
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
}
