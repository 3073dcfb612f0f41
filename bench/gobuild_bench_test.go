//go:build bench

package bench

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// goBuildSides are BenchmarkGoBuild's sides and what each is.
var goBuildSides = map[string]string{
	"sequential": "one after the other",
	"at-once":    "both at once",
	"gogc":       "one after the other, GOGC={gogc}",
	"dwarf":      "GOGC={gogc}, compiler DWARF on",
	"nodwarf":    "GOGC={gogc}, -gcflags=all=-dwarf=false",
	"tags":       "GOGC={gogc}, -tags={tags}",
	"notags":     "GOGC={gogc}, no build tags",
}

// BenchmarkGoBuild (`make bench-gobuild`): cold Go builds side by side in
// one run, the wall time and the CPU time (user and system, of every
// process the builds ran) of each side. SIDES (default "sequential at-once
// gogc") picks among:
//
//	sequential  the two builds one after the other, as logged
//	at-once     the same two at once: does `make images` gain from running
//	            Go builds side by side, or lose to oversubscription (each
//	            go command already runs as many compilers as CPUs)?
//	gogc        one after the other, the compiler's garbage collector
//	            relaxed (GOGC=BENCH_GOGC, default 400), as make images runs
//	dwarf       as gogc, the compiler writing DWARF (no -dwarf=false)
//	nodwarf     as gogc, with -gcflags=all=-dwarf=false: the binaries are
//	            linked with -s -w, so the compiler's DWARF is wasted work;
//	            with dwarf, the binaries are compared byte for byte
//	tags        as gogc, with -tags BENCH_TAGS (default Kubernetes' release
//	            tags) in place of any logged ones
//	notags      as gogc, without -tags; with tags, the sizes side by side
//
// The builds are the image factory's, replayed from the newest log of its
// Go build modules (WRAPPER_DIRS, one or two; default the two etcd server
// builds under ~/.cache/capd-e2e/gobuild, made by `make images`) in the
// environment logged with them, writing into a folder of the side's. Each
// side gets an empty Go build cache of its own, shared by its builds as in
// `make images`; the module cache is shared and warm (downloads are not
// measured). Ratios are against the first side.
func BenchmarkGoBuild(b *testing.B) {
	gogc, tags := envOr("BENCH_GOGC", "400"), envOr("BENCH_TAGS", "selinux,notest,grpcnotrace")
	sides := strings.Fields(envOr("SIDES", "sequential at-once gogc"))
	for _, s := range sides {
		if goBuildSides[s] == "" {
			b.Fatalf("SIDES: unknown side %q (want some of: %s)", s, strings.Join(slices.Sorted(maps.Keys(goBuildSides)), " "))
		}
	}
	dirs := strings.Fields(os.Getenv("WRAPPER_DIRS"))
	if len(dirs) == 0 {
		home, _ := os.UserHomeDir() // an empty home only makes the glob find nothing
		cache := envOr("CAPD_E2E_GOBUILD_CACHE", filepath.Join(home, ".cache/capd-e2e/gobuild"))
		dirs = Glob(filepath.Join(cache, "go.etcd.io_etcd_server_v3@*"))
	}
	if len(dirs) != 1 && len(dirs) != 2 {
		b.Fatalf("want one or two Go build modules of the factory (WRAPPER_DIRS, or two etcd builds after make images), got %d: %v", len(dirs), dirs)
	}
	if slices.Contains(sides, "at-once") && len(dirs) != 2 {
		b.Fatal("side at-once needs two builds")
	}
	builds := make([]GoBuild, len(dirs))
	for i, d := range dirs {
		g, err := ReadGoBuild(d)
		if err != nil {
			b.Fatal(err)
		}
		builds[i] = g
	}
	out, tmp := outDir(b, "gobuild"), b.TempDir()

	// build replays g for side into tmp/side: its wall and CPU time.
	build := func(side string, g GoBuild) (time.Duration, error) {
		bin := filepath.Join(tmp, side, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return 0, err
		}
		g = g.WithOutput(bin)
		env := g.EnvWithout("GOGC")
		if side != "sequential" && side != "at-once" {
			env = append(env, "GOGC="+gogc)
		}
		switch side {
		case "dwarf":
			g = g.Without("-gcflags", "all=-dwarf=false")
		case "nodwarf":
			g = g.Without("-gcflags", "all=-dwarf=false").With("-gcflags=all=-dwarf=false")
		case "tags":
			g = g.Without("-tags", "").With("-tags=" + tags)
		case "notags":
			g = g.Without("-tags", "")
		}
		log, err := os.Create(filepath.Join(out, side+"-"+filepath.Base(g.Dir)+".log"))
		if err != nil {
			return 0, err
		}
		defer log.Close()
		cmd := exec.CommandContext(b.Context(), g.Args[0], g.Args[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = g.Dir, log, log
		cmd.Env = append(append(os.Environ(), env...), "GOCACHE="+filepath.Join(tmp, side, "gocache"))
		fmt.Fprintf(log, "# env %s\n# %s\n", strings.Join(env, " "), strings.Join(g.Args, " "))
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("side %s, %s: %w (log: %s)", side, g.Dir, err, log.Name())
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
	}

	type result struct{ wall, cpu time.Duration }
	results := map[string]result{}
	for _, side := range sides {
		b.Logf("%s: %s", side, strings.Join(dirs, " "))
		start := time.Now()
		var cpu time.Duration
		if side == "at-once" {
			var wg sync.WaitGroup
			var mu sync.Mutex
			errs := make([]error, len(builds))
			for i, g := range builds {
				wg.Go(func() {
					c, err := build(side, g)
					mu.Lock()
					cpu, errs[i] = cpu+c, err
					mu.Unlock()
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		} else {
			for _, g := range builds {
				c, err := build(side, g)
				if err != nil {
					b.Fatal(err)
				}
				cpu += c
			}
		}
		if len(Glob(filepath.Join(tmp, side, "bin", "*"))) == 0 {
			b.Fatalf("side %s built nothing (logs in %s)", side, out)
		}
		results[side] = result{time.Since(start), cpu}
		b.ReportMetric(results[side].wall.Seconds(), side+"-wall-s")
		b.ReportMetric(cpu.Seconds(), side+"-cpu-s")
	}

	first := results[sides[0]]
	t := Table{Header: []string{"side", "wall", "CPU (user + system)", "wall / " + sides[0], "CPU / " + sides[0]}}
	for _, s := range sides {
		r := results[s]
		t.Add(strings.NewReplacer("{gogc}", gogc, "{tags}", tags).Replace(goBuildSides[s]), fmt.Sprintf("%.1f s", r.wall.Seconds()), fmt.Sprintf("%.1f s", r.cpu.Seconds()),
			fmt.Sprintf("%.2f", r.wall.Seconds()/first.wall.Seconds()), fmt.Sprintf("%.2f", r.cpu.Seconds()/first.cpu.Seconds()))
	}
	var text strings.Builder
	fmt.Fprintf(&text, "# cold Go builds, %s, %s\n\nbuilds: %s\n\nenvironment, as logged (GOGC is each side's): %s\n\n%s",
		Host(), goVersion(b), strings.Join(dirs, " "), strings.Join(builds[0].Env, " "), t)
	if slices.Contains(sides, "dwarf") && slices.Contains(sides, "nodwarf") {
		text.WriteString("\nbinaries, compiler DWARF on vs off (sha256):\n")
		for _, f := range Glob(filepath.Join(tmp, "dwarf/bin/*")) {
			a, b2 := fileSum(b, f), fileSum(b, filepath.Join(tmp, "nodwarf/bin", filepath.Base(f)))
			if bytes.Equal(a, b2) {
				fmt.Fprintf(&text, "- %s: identical (%x)\n", filepath.Base(f), a[:8])
			} else {
				fmt.Fprintf(&text, "- %s: DIFFERENT (%x vs %x)\n", filepath.Base(f), a[:8], b2[:8])
			}
		}
	}
	if slices.Contains(sides, "tags") && slices.Contains(sides, "notags") {
		fmt.Fprintf(&text, "\nbinaries, -tags=%s vs no tags (bytes):\n", tags)
		for _, f := range Glob(filepath.Join(tmp, "tags/bin/*")) {
			a, b2 := fileSize(b, f), fileSize(b, filepath.Join(tmp, "notags/bin", filepath.Base(f)))
			fmt.Fprintf(&text, "- %s: %d vs %d (%.2f)\n", filepath.Base(f), a, b2, float64(a)/float64(b2))
		}
	}
	writeResults(b, out, text.String())
}

func goVersion(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func fileSum(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	s := sha256.Sum256(data)
	return s[:]
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
