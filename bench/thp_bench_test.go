//go:build bench

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

const thpEnabled = "/sys/kernel/mm/transparent_hugepage/enabled"

var thpSelected = regexp.MustCompile(`\[([a-z]+)\]`)

// BenchmarkTHP (`make bench-thp`): a cold Go build with the kernel's
// transparent huge pages at "madvise" (Debian's default; the Go runtime
// advises none) and at "always", in rounds (-benchtime Nx: N) interleaved,
// each from an empty build cache of its own: the wall, user and system
// time of each, and their medians. The build is the cert-manager
// substitute's (client-go and controller-runtime among its packages), as
// the image factory compiles it. Needs root (it writes
// /sys/kernel/mm/transparent_hugepage/enabled) and puts the setting back
// as it found it.
func BenchmarkTHP(b *testing.B) {
	was, err := os.ReadFile(thpEnabled)
	if err != nil {
		b.Fatal(err)
	}
	m := thpSelected.FindSubmatch(was)
	if m == nil {
		b.Fatalf("%s: no selected mode in %q", thpEnabled, was)
	}
	set := func(mode string) {
		if err := os.WriteFile(thpEnabled, []byte(mode), 0); err != nil {
			b.Fatalf("set %s to %s (run as root): %v", thpEnabled, mode, err)
		}
	}
	set(string(m[1]))
	b.Cleanup(func() { set(string(m[1])) })
	root, work := repoRoot(b), b.TempDir()
	run(b, root, nil, "go", "mod", "download")
	modes := []string{"madvise", "always"}
	samples := map[string][3][]float64{}
	for i := 0; b.Loop(); i++ {
		for _, mode := range modes {
			set(mode)
			cache := filepath.Join(work, "cache")
			removeAll(b, cache)
			cmd := exec.CommandContext(b.Context(), "go", "build", "-gcflags=all=-dwarf=false",
				"-o", filepath.Join(work, "bin"), "./cmd/cert-manager-substitute")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOGC=400", "CGO_ENABLED=0")
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("build: %v\n%s", err, out)
			}
			s := samples[mode]
			s[0] = append(s[0], time.Since(start).Seconds())
			s[1] = append(s[1], cmd.ProcessState.UserTime().Seconds())
			s[2] = append(s[2], cmd.ProcessState.SystemTime().Seconds())
			samples[mode] = s
			b.Logf("round %d, %s: wall %.1f s, user %.1f s, system %.1f s", i+1, mode, s[0][i], s[1][i], s[2][i])
		}
	}
	t := Table{Header: []string{"THP", "wall (median)", "user (median)", "system (median)"}}
	for _, mode := range modes {
		row := []string{mode}
		for k, what := range []string{"wall", "user", "system"} {
			med := Median(samples[mode][k])
			row = append(row, strconv.FormatFloat(med, 'f', 1, 64)+" s")
			b.ReportMetric(med, mode+"-"+what+"-s")
		}
		t.Add(row...)
	}
	writeResults(b, outDir(b, "thp"), fmt.Sprintf("# cold build of ./cmd/cert-manager-substitute, THP madvise vs always, %d rounds, %s\n\n%s", b.N, Host(), t))
}
