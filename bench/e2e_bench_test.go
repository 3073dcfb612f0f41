//go:build bench

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkE2E (`make bench-e2e`): the suite's timings, every side in one
// run:
//
//	pr          the PR job (`make test-e2e`, label filter FILTER, default
//	            PR-Blocking): suite time, setup phases, the quick-start's
//	            phase table, and per cluster the control plane's start and
//	            the nodes' BGP sessions (E2EReport)
//	comparison  our quick-start, upstream's QuickStartSpec and the two log
//	            collectors on one management cluster (bench/e2e's
//	            "comparison" specs); COMPARISON=false leaves it out
//
// With BEFORE_REF (a commit), the PR job also runs from that commit, in a
// git worktree, on the same images (the suite checks images by name), so
// that before and after are measured in the same run; BEFORE_DIR instead
// names a checkout prepared by hand. SKIP (space-separated regular
// expressions of spec texts, GINKGO_SKIP's form) leaves specs out of the
// before and after runs, e.g. a spec only one side has. Every run is a
// supervised one: its artifacts are scanned for secrets, and one that left
// any is redacted and fails. A failed run is marked in results.md, the
// others still run, and the benchmark fails at the end.
func BenchmarkE2E(b *testing.B) {
	root, out := repoRoot(b), outDir(b, "e2e")
	// "!comparison" keeps a checkout from before bench/e2e existed (whose
	// e2e suite held the comparison specs) to the same specs.
	filter := envOr("FILTER", "PR-Blocking && !comparison")
	type suiteRun struct{ name, dir string }
	var runs []suiteRun
	switch before := os.Getenv("BEFORE_DIR"); {
	case before != "":
		if _, err := os.Stat(filepath.Join(before, "e2e/e2e_suite_test.go")); err != nil {
			b.Fatalf("BEFORE_DIR=%s holds no e2e suite: %v", before, err)
		}
		runs = append(runs, suiteRun{"pr-before", before})
	case os.Getenv("BEFORE_REF") != "":
		wt := filepath.Join(b.TempDir(), "before")
		run(b, root, nil, "git", "worktree", "add", "--detach", wt, gitRev(b, root, os.Getenv("BEFORE_REF")))
		ctx := cleanupCtx(b)
		b.Cleanup(func() { runCtx(b, ctx, root, nil, "git", "worktree", "remove", "--force", wt) })
		runs = append(runs, suiteRun{"pr-before", wt})
	}
	runs = append(runs, suiteRun{"pr", root})
	if envBool(b, "COMPARISON", true) {
		runs = append(runs, suiteRun{"comparison", root})
	}
	var report strings.Builder
	fmt.Fprintf(&report, "# bench-e2e, %s, at %s, label filter: %s", Host(), gitRev(b, root, "HEAD")[:12], filter)
	if v := envOr("BEFORE_REF", os.Getenv("BEFORE_DIR")); v != "" {
		fmt.Fprintf(&report, ", before = %s", v)
	}
	if v := os.Getenv("SKIP"); v != "" {
		fmt.Fprintf(&report, ", skip: %s", v)
	}
	report.WriteString("\n\n")
	var failed []string
	for _, r := range runs {
		env := []string{"ARTIFACTS=" + filepath.Join(out, r.name), "GINKGO_LABEL_FILTER=" + filter, "GINKGO_SKIP=" + os.Getenv("SKIP")}
		if r.name == "comparison" {
			env = []string{"ARTIFACTS=" + filepath.Join(out, r.name), "GINKGO_LABEL_FILTER=!scale", "GINKGO_SKIP=",
				"E2E_SUITE_DIR=" + filepath.Join(root, "bench/e2e")}
		}
		b.Logf("%s: %s", r.name, strings.Join(env[1:], " "))
		start := time.Now()
		log := filepath.Join(out, r.name+".log")
		err := Cmd{Dir: r.dir, Env: env, Log: log, Args: []string{"make", "test-e2e"}}.Run(b.Context(), grace)
		b.ReportMetric(time.Since(start).Seconds(), r.name+"-s")
		failure := ""
		if err != nil {
			failure = err.Error()
			failed = append(failed, r.name)
		}
		report.WriteString(E2EReport(r.name, filepath.Join(out, r.name), log, failure))
	}
	writeResults(b, out, report.String())
	if len(failed) > 0 {
		b.Fatalf("failed runs: %s", strings.Join(failed, ", "))
	}
}
