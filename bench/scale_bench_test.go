//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/go-units"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/internal/hoststat"
)

// BenchmarkScale (`make bench-scale`): one quick-start alone, then three
// at once (GINKGO_NODES=3, one per Ginkgo process), in one run. Each side
// is a real supervised run (scripts/ci-e2e.sh) of bench/e2e's "scale"
// specs with its own management cluster. It reports each side's wall time
// from the first quick-start's start to the last one's end (the
// management cluster's setup is not in it) and their ratio; and, from
// samples every 5 s while three ran, the most memory each workload
// container used, by role, the least memory the host had available and
// its highest load average. BENCH_SCALE_BEYOND="5 7" then runs that many
// at once, in turn, until a run fails: where this machine runs out.
func BenchmarkScale(b *testing.B) {
	root, out := repoRoot(b), outDir(b, "scale")
	var beyond []int
	for _, f := range strings.Fields(os.Getenv("BENCH_SCALE_BEYOND")) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_SCALE_BEYOND: %q is not a count", f)
		}
		beyond = append(beyond, n)
	}
	rt := newRuntime(b)
	// side runs n quick-starts at once, sampling the host meanwhile.
	side := func(name string, n int, focus string) (passed, ran int, span time.Duration, st *scaleStats, err error) {
		b.Logf("%s: GINKGO_NODES=%d SCALE_CLUSTERS=%d", name, n, n)
		ctx, stop := context.WithCancel(b.Context())
		st = &scaleStats{peak: map[string]int64{}, role: map[string]string{}}
		var wg sync.WaitGroup
		wg.Go(func() { st.sample(ctx, rt, 5*time.Second) })
		err = Cmd{Dir: root, Log: filepath.Join(out, name+".log"), Args: []string{"scripts/ci-e2e.sh"}, Env: []string{
			"E2E_SUITE_DIR=" + filepath.Join(root, "bench/e2e"), "ARTIFACTS=" + filepath.Join(out, name),
			"GINKGO_LABEL_FILTER=scale", fmt.Sprintf("GINKGO_NODES=%d", n), fmt.Sprintf("SCALE_CLUSTERS=%d", n), "GINKGO_FOCUS=" + focus,
		}}.Run(b.Context(), grace)
		stop()
		wg.Wait()
		passed, ran, span, spanErr := SpecSpan(filepath.Join(out, name), "quick-start")
		if err == nil {
			err = spanErr
		}
		b.Logf("%s: %d of %d passed, %s from first start to last end (%v)", name, passed, ran, span, err)
		return passed, ran, span, st, err
	}
	p1, n1, one, _, err := side("one", 1, "cluster 1 of ")
	if err != nil || p1 != 1 {
		b.Fatalf("the quick-start alone did not pass (%d of %d): %v", p1, n1, err)
	}
	p3, n3, three, st, err := side("three", 3, "")
	if err != nil || p3 != 3 {
		b.Fatalf("%d of 3 quick-starts at once passed: %v", p3, err)
	}
	b.ReportMetric(one.Seconds(), "alone-s")
	b.ReportMetric(three.Seconds(), "three-s")

	var text strings.Builder
	fmt.Fprintf(&text, "# quick-starts at once, %s\n\n", Host())
	t := Table{Header: []string{"side", "specs", "wall (first start to last end)"}}
	t.Add("alone", strconv.Itoa(n1), fmt.Sprintf("%.1f s", one.Seconds()))
	t.Add("at once (GINKGO_NODES=3)", strconv.Itoa(n3), fmt.Sprintf("%.1f s", three.Seconds()))
	fmt.Fprintf(&text, "%s\nratio: %.2f (three at once / one alone)\n\nMost memory per container while three ran (every 5 s):\n\n%s\n%s",
		t, three.Seconds()/one.Seconds(), st.byRole("quick-start-"), st.host())
	var more Table
	more.Header = []string{"at once", "passed", "wall", "result", "least host memory available", "highest load"}
	for _, n := range beyond {
		pn, _, wn, sn, err := side(fmt.Sprintf("at-once-%d", n), n, "")
		more.Add(strconv.Itoa(n), fmt.Sprintf("%d of %d", pn, n), fmt.Sprintf("%.1f s", wn.Seconds()), Result(err), GiB(sn.minAvail), fmt.Sprintf("%.2f", sn.maxLoad))
		if err != nil || pn != n {
			break // a failure here is the result sought, not the benchmark's
		}
	}
	if len(beyond) > 0 {
		fmt.Fprintf(&text, "\nMore at once (BENCH_SCALE_BEYOND), until one fails:\n\n%s", more)
	}
	writeResults(b, out, text.String())
}

// scaleStats are the samples of one side.
type scaleStats struct {
	mu       sync.Mutex
	peak     map[string]int64  // container → most memory seen
	role     map[string]string // container → kind's role label
	minAvail int64
	maxLoad  float64
}

// sample records, every interval until ctx ends, the memory of every
// cluster container (docker stats: the runtime has no stats call; the
// CLI reports memory as the engine computes it), the host's memory
// available and its load average.
func (s *scaleStats) sample(ctx context.Context, rt runtime.Runtime, every time.Duration) {
	for {
		s.once(ctx, rt)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func (s *scaleStats) once(ctx context.Context, rt runtime.Runtime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, err := hoststat.MemAvailable(); err == nil && (s.minAvail == 0 || n < s.minAvail) {
		s.minAvail = n
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 0 {
			if l, err := strconv.ParseFloat(f[0], 64); err == nil && l > s.maxLoad {
				s.maxLoad = l
			}
		}
	}
	cs, err := rt.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: ""}})
	if err != nil || len(cs) == 0 {
		return // between clusters, or the run is ending: the next sample
	}
	args := []string{"stats", "--no-stream", "--format", "{{.Name}}\t{{.MemUsage}}"}
	for _, c := range cs {
		s.role[c.Name] = c.Labels[runtime.LabelRole]
		args = append(args, c.Name)
	}
	outb, _ := exec.CommandContext(ctx, "docker", args...).Output() // a container gone meanwhile fails the call: the next sample
	sc := bufio.NewScanner(bytes.NewReader(outb))
	for sc.Scan() {
		name, usage, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		used, _, _ := strings.Cut(usage, " / ")
		n, err := units.RAMInBytes(strings.TrimSpace(used))
		if err == nil && n > s.peak[name] {
			s.peak[name] = n
		}
	}
}

// byRole tables the peaks of the containers whose name starts with prefix
// by role: the median container's and the largest.
func (s *scaleStats) byRole(prefix string) Table {
	perRole := map[string][]float64{}
	for name, p := range s.peak {
		if strings.HasPrefix(name, prefix) {
			perRole[s.role[name]] = append(perRole[s.role[name]], float64(p)/(1<<20))
		}
	}
	t := Table{Header: []string{"role", "containers", "max MiB (median of containers)", "max MiB (largest)"}}
	for _, r := range slices.Sorted(maps.Keys(perRole)) {
		t.Add(r, strconv.Itoa(len(perRole[r])), fmt.Sprintf("%.0f", Median(perRole[r])), fmt.Sprintf("%.0f", slices.Max(perRole[r])))
	}
	return t
}

func (s *scaleStats) host() string {
	return fmt.Sprintf("\nleast memory available on the host: %s\nhighest 1-minute load average: %.2f\n", GiB(s.minAvail), s.maxLoad)
}
