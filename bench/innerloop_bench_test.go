//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkInnerLoop (`make bench-inner-loop`): edit → spec green, both
// ways, in one run, on CAPI_SOURCE_DIR (a cluster-api tree; copied, so the
// original is never touched):
//
//	full   the edit, then `make test-e2e` from scratch (images, kind,
//	       clusterctl init, the spec creating its own cluster, teardown)
//	inner  `make up` once (the loop's fixed cost, reported apart), then
//	       the edit, then `make iterate` (rebuild what changed, load, roll
//	       out, the same spec against the kept clusters)
//
// Each round's edit is a new line in the core manager's main.go, so both
// sides rebuild the core image. ROUNDS rounds (default 1): every full
// round first, then `make up`, then every inner round. GINKGO_LABEL_FILTER
// names the spec both sides run (default md-rollout, which make iterate
// runs on the kept workload cluster).
func BenchmarkInnerLoop(b *testing.B) {
	src := os.Getenv("CAPI_SOURCE_DIR")
	if src == "" {
		b.Fatal("set CAPI_SOURCE_DIR to a cluster-api tree")
	}
	root, out := repoRoot(b), outDir(b, "inner-loop")
	tree := filepath.Join(b.TempDir(), "cluster-api")
	run(b, root, nil, "cp", "-a", src+"/.", tree)
	main := filepath.Join(tree, "core/main.go") // v1.14 on; the root before
	if _, err := os.Stat(main); err != nil {
		main = filepath.Join(tree, "main.go")
	}
	if _, err := os.Stat(main); err != nil {
		b.Fatalf("no core main.go in %s (core/main.go or main.go)", src)
	}
	edit := func() {
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if _, err := fmt.Fprintf(f, "\n// bench-inner-loop edit %d\n", time.Now().UnixNano()); err != nil {
			b.Fatal(err)
		}
	}
	filter := envOr("GINKGO_LABEL_FILTER", "md-rollout")
	env := []string{"CAPI_SOURCE_DIR=" + tree, "NAME=bench-inner-loop", "GINKGO_LABEL_FILTER=" + filter}
	// timed runs one of scripts/ci-e2e.sh's jobs and returns its wall time.
	timed := func(log string, extra []string, args ...string) time.Duration {
		start := time.Now()
		err := Cmd{Dir: root, Env: append(env, extra...), Log: filepath.Join(out, log), Args: append([]string{"scripts/ci-e2e.sh"}, args...)}.Run(b.Context(), grace)
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.Cleanup(func() {
		// b.Context() has ended by now: the removal gets a deadline of its own.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := (Cmd{Dir: root, Env: env, Log: filepath.Join(out, "down.log"), Args: []string{"scripts/capd-e2e.sh", "down"}}).Run(ctx, time.Minute); err != nil {
			b.Errorf("make down: %v", err)
		}
	})
	rounds := envInt(b, "ROUNDS", 1)
	full := make([]time.Duration, rounds)
	for i := range rounds {
		edit()
		full[i] = timed(fmt.Sprintf("full-%d.log", i+1), []string{"ARTIFACTS=" + filepath.Join(out, fmt.Sprintf("full-%d", i+1))})
		b.Logf("round %d: full make test-e2e %s", i+1, full[i].Round(time.Second))
	}
	up := timed("up.log", []string{"ARTIFACTS=" + filepath.Join(out, "up")}, "up")
	b.Logf("make up: %s (once)", up.Round(time.Second))
	t := Table{Header: []string{"round", "edit → green, full make test-e2e", "edit → green, make iterate", "inner / full"}}
	var inner []float64
	for i := range rounds {
		edit()
		d := timed(fmt.Sprintf("inner-%d.log", i+1), []string{"ARTIFACTS=" + filepath.Join(out, fmt.Sprintf("inner-%d", i+1))}, "iterate")
		inner = append(inner, d.Seconds())
		pct := 100 * d.Seconds() / full[i].Seconds()
		b.Logf("round %d: full %s, inner loop %s (%.0f%%)", i+1, full[i].Round(time.Second), d.Round(time.Second), pct)
		t.Add(fmt.Sprint(i+1), fmt.Sprintf("%.0f s", full[i].Seconds()), fmt.Sprintf("%.0f s", d.Seconds()), fmt.Sprintf("%.0f%%", pct))
	}
	var fulls []float64
	for _, d := range full {
		fulls = append(fulls, d.Seconds())
	}
	b.ReportMetric(Median(fulls), "full-s")
	b.ReportMetric(Median(inner), "inner-s")
	b.ReportMetric(up.Seconds(), "up-s")
	writeResults(b, out, fmt.Sprintf("# edit → green, %s\n\nspec: %s; make up (once): %.0f s\n\n%s", Host(), filter, up.Seconds(), t))
}
