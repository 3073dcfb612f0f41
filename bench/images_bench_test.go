//go:build bench

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkImages (`make bench-images`): a cold `make images` measured both
// ways in one run: one step at a time (-jobs 1) and the default parallel
// schedule (-jobs JOBS, default the number of CPUs); SIDES overrides the
// -jobs values, e.g. SIDES=2 for one side only. Each side starts as on a
// fresh machine: every image the factory built is removed from the
// engine, and the build runs with an empty Go module cache, Go build
// cache and harness cache of its own (under BENCH_CACHE, default
// /tmp/capd-e2e-bench-images), so it downloads every module and compiles
// everything; the machine's own caches are left alone. Per side: the
// wall time, the CPUs busy on average and the least memory available
// (sampled every 2 s); each side's log, with per-step times, is kept.
// IMAGES_ONLY=id,... builds only those steps and their dependencies (as
// `make images` does), e.g. to try the benchmark on a small plan.
func BenchmarkImages(b *testing.B) {
	prepareHost(b)
	rt, bin, out := newRuntime(b), capdE2E(b), outDir(b, "images")
	cache := envOr("BENCH_CACHE", "/tmp/capd-e2e-bench-images")
	sides := strings.Fields(envOr("SIDES", "1 "+envOr("JOBS", strconv.Itoa(goruntime.NumCPU()))))
	t := Table{Header: []string{"-jobs", "result", "wall", "CPUs busy (avg)", "least memory available"}}
	failed := false
	for _, j := range sides {
		if n, err := strconv.Atoi(j); err != nil || n < 1 {
			b.Fatalf("SIDES: %q is no -jobs count", j)
		}
		clearPlanImages(b, rt)
		env := emptyCaches(b, cache)
		b.Logf("-jobs %s, from empty caches and no image of the plan", j)
		m, err := StartMeter(2 * time.Second)
		if err != nil {
			b.Fatal(err)
		}
		log := filepath.Join(out, "jobs-"+j+".log")
		args := []string{bin, "images", "--config", envOr("E2E_CONFIG", "config/e2e.yaml"), "--jobs", j}
		if only := os.Getenv("IMAGES_ONLY"); only != "" {
			args = append(args, "--only", only)
		}
		runErr := Cmd{Dir: repoRoot(b), Env: env, Log: log, Args: args}.Run(b.Context(), grace)
		u, err := m.Stop()
		if err != nil {
			b.Fatal(err)
		}
		if runErr != nil {
			b.Error(runErr)
			failed = true
		}
		steps, _ := BuiltSteps(strings.NewReader(ReadFile(log))) // a scanner error only shortens the count logged
		b.Logf("-jobs %s: %s in %s, %d steps built", j, Result(runErr), MinSec(u.Wall), len(steps))
		b.ReportMetric(u.Wall.Seconds(), "jobs-"+j+"-wall-s")
		t.Add(j, Result(runErr), MinSec(u.Wall), fmt.Sprintf("%.2f of %d", u.CPUsBusy, u.CPUs), GiB(u.MinAvailable))
	}
	removeAll(b, cache)
	writeResults(b, out, fmt.Sprintf("# cold make images, %s\n\n%s", Host(), t))
	if failed {
		b.Fail()
	}
}

// gitRev resolves ref in the repository at root.
func gitRev(b *testing.B, root, ref string) string {
	b.Helper()
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", ref+"^{commit}").Output()
	if err != nil {
		b.Fatalf("%q is no commit: %v", ref, err)
	}
	return strings.TrimSpace(string(out))
}
