package logs_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// Environment of BenchmarkCollectNode.
const (
	// benchKindEnv must be set (to anything) for the benchmark to run: it
	// creates a 3-node kind cluster, which takes minutes.
	benchKindEnv = "CAPD_E2E_BENCH_KIND"
	// benchNodeImageEnv overrides the node image; default kindest/node:v1.36.3
	// (made by make images).
	benchNodeImageEnv = "CAPD_E2E_BENCH_NODE_IMAGE"
	// benchClusterEnv names an existing kind cluster to use instead of
	// creating one; it is left alone afterwards.
	benchClusterEnv = "CAPD_E2E_BENCH_KIND_CLUSTER"
)

// BenchmarkCollectNode measures our Collector against upstream's
// framework.DockerLogCollector on the same kind nodes (1 control plane, 2
// workers), in one run. Each iteration collects all nodes with both, in
// alternating order: ours as the harness does for kind nodes
// (CollectMachines, concurrently), upstream's as its suite does
// (dumpKindClusterLogs: CollectMachineLog per node, one after the other,
// with a Machine named after the node). It reports each side's median wall
// time and their ratio, and fails if, in a round where upstream ran first,
// our files are not a superset of upstream's for some node. With a local
// Docker engine it also splits each side's CPU into the processes its execs
// made (runc, and the commands run in the nodes), the daemons' own work and
// the collector process (see cpuSample): on a machine whose cores are all
// busy, wall time follows that total. Run it with:
//
//	CAPD_E2E_BENCH_KIND=1 go test -run '^$' -bench BenchmarkCollectNode -benchtime 10x ./framework/logs/
//
// The cluster is named capd-e2e-bench-<run id> (kind labels its containers
// with it; the kind library takes no other labels) and deleted at the end.
func BenchmarkCollectNode(b *testing.B) {
	if os.Getenv(benchKindEnv) == "" {
		b.Skipf("creates a kind cluster: set %s=1 to run", benchKindEnv)
	}
	r := runtimetest.Engine(b)
	ctx := context.Background()
	nodes := kindNodes(b, r)
	b.Logf("nodes: %s", strings.Join(nodes, ", "))

	ours := &logs.Collector{Runtime: r}
	upstream := framework.DockerLogCollector{}
	runOurs := func(dir string) error {
		targets := make([]logs.Target, len(nodes))
		for i, n := range nodes {
			targets[i] = logs.Target{Container: n, Dir: filepath.Join(dir, n)}
		}
		return ours.CollectMachines(ctx, targets)
	}
	runUpstream := func(dir string) error {
		var errs []string
		for _, n := range nodes {
			m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: clusterv1.MachineSpec{ClusterName: n}}
			if err := upstream.CollectMachineLog(ctx, nil, m, filepath.Join(dir, n)); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}

	// A round untimed, so that neither side is the one that pulls the
	// journals into the page cache.
	warm := b.TempDir()
	if err := runUpstream(filepath.Join(warm, "upstream")); err != nil {
		b.Logf("upstream (warm-up): %v", err)
	}
	if err := runOurs(filepath.Join(warm, "ours")); err != nil {
		b.Logf("ours (warm-up): %v", err)
	}
	_ = os.RemoveAll(warm)

	// CPU accounting, where the host allows it (see cpuSample). The
	// daemons' own background (and whatever else the engine serves
	// meanwhile) is measured over a window first and taken out.
	_, cpuOK := sampleCPU()
	var idle cpuSample
	if cpuOK {
		before, _ := sampleCPU()
		start := time.Now()
		time.Sleep(3 * time.Second) // a measurement window, not a wait for a condition
		after, _ := sampleCPU()
		idle = after.minus(before).per(time.Since(start))
	}
	cpu := map[string][]cpuSample{}

	var oursTimes, upTimes []time.Duration
	var lastOurs, lastUp map[string][]string
	// b.Loop, unlike a loop to b.N, calls this function once, so the
	// cluster is made once.
	for i := 0; b.Loop(); i++ {
		dir, err := os.MkdirTemp("", "capd-e2e-bench-logs-")
		if err != nil {
			b.Fatal(err)
		}
		upFirst := i%2 == 1
		sides := []struct {
			name  string
			run   func(string) error
			times *[]time.Duration
		}{{"ours", runOurs, &oursTimes}, {"upstream", runUpstream, &upTimes}}
		if upFirst {
			slices.Reverse(sides)
		}
		for _, s := range sides {
			before, _ := sampleCPU()
			start := time.Now()
			err := s.run(filepath.Join(dir, s.name))
			took := time.Since(start)
			after, _ := sampleCPU()
			*s.times = append(*s.times, took)
			if cpuOK {
				cpu[s.name] = append(cpu[s.name], after.minus(before).minus(idle.times(took)))
			}
			if err != nil {
				b.Logf("round %d, %s: %v", i, s.name, err)
			}
		}
		b.StopTimer()
		lastOurs, lastUp = filesPerNode(b, filepath.Join(dir, "ours"), nodes), filesPerNode(b, filepath.Join(dir, "upstream"), nodes)
		if upFirst {
			// Files may appear between the two runs (a pod starts), never
			// disappear: what upstream saw first, we must have.
			for _, n := range nodes {
				if missing := minus(lastUp[n], lastOurs[n]); len(missing) > 0 {
					b.Errorf("round %d, node %s: upstream has files ours lacks: %s", i, n, strings.Join(missing, ", "))
				}
			}
		}
		_ = os.RemoveAll(dir)
		b.StartTimer()
	}

	mo, mu := median(oursTimes), median(upTimes)
	b.ReportMetric(ms(mo), "ours-ms")
	b.ReportMetric(ms(mu), "upstream-ms")
	b.ReportMetric(float64(mu)/float64(mo), "upstream/ours")
	b.Logf("%d rounds on %d nodes: ours median %s (%s), upstream median %s (%s), upstream/ours %.2f",
		len(oursTimes), len(nodes), mo.Round(time.Millisecond), roundAll(oursTimes),
		mu.Round(time.Millisecond), roundAll(upTimes), float64(mu)/float64(mo))
	if cpuOK {
		b.Logf("CPU per collection of the %d nodes (medians; daemons' idle rate %s/s taken out):",
			len(nodes), idle.daemons.Round(time.Millisecond))
		b.Logf("  %-9s %18s %10s %10s %10s", "side", "runc+in-node cmds", "daemons", "collector", "total")
		for _, side := range []string{"ours", "upstream"} {
			m := medianCPU(cpu[side])
			b.Logf("  %-9s %18s %10s %10s %10s", side, m.execs.Round(time.Millisecond), m.daemons.Round(time.Millisecond),
				m.self.Round(time.Millisecond), (m.execs + m.daemons + m.self).Round(time.Millisecond))
			b.ReportMetric(ms(m.execs+m.daemons+m.self), side+"-cpu-ms")
		}
	}
	for _, n := range nodes {
		b.Logf("node %s: ours %d files, upstream %d files; upstream-only: [%s]; ours-only: %s",
			n, len(lastOurs[n]), len(lastUp[n]), strings.Join(minus(lastUp[n], lastOurs[n]), " "), summarize(minus(lastOurs[n], lastUp[n])))
		b.Logf("  upstream: %s", summarize(lastUp[n]))
	}
}

// kindNodes returns the node containers of the cluster named by
// benchClusterEnv, or of a new 3-node cluster deleted when b ends.
func kindNodes(b *testing.B, r runtime.Runtime) []string {
	ctx := context.Background()
	if name := os.Getenv(benchClusterEnv); name != "" {
		list, err := r.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: name}, Running: true})
		if err != nil || len(list) == 0 {
			b.Fatalf("kind cluster %q: %d running nodes, %v", name, len(list), err)
		}
		var nodes []string
		for _, c := range list {
			if c.Labels[runtime.LabelRole] != "external-load-balancer" {
				nodes = append(nodes, c.Name)
			}
		}
		return nodes
	}
	image := os.Getenv(benchNodeImageEnv)
	if image == "" {
		image = "kindest/node:v1.36.3"
	}
	createCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	k, err := bootstrap.CreateKind(createCtx, bootstrap.KindOptions{
		Name:      "capd-e2e-bench-" + runtime.NewRunID(),
		NodeImage: image,
		Workers:   2,
		Runtime:   r,
	})
	if err != nil {
		b.Fatalf("create kind cluster: %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := k.Delete(ctx); err != nil {
			b.Errorf("delete kind cluster: %v", err)
		}
	})
	nodes, err := k.Nodes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return nodes
}

// filesPerNode lists the files under dir/<node>, relative to it.
func filesPerNode(b *testing.B, dir string, nodes []string) map[string][]string {
	out := map[string][]string{}
	for _, n := range nodes {
		root := filepath.Join(dir, n)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				out[n] = append(out[n], filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			b.Errorf("list %s: %v", root, err)
		}
	}
	return out
}

// minus returns the names in a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// summarize lists names, folding pods/... into a count.
func summarize(names []string) string {
	var top []string
	pods := 0
	for _, n := range names {
		if strings.HasPrefix(n, "pods/") {
			pods++
			continue
		}
		top = append(top, n)
	}
	slices.Sort(top)
	return fmt.Sprintf("[%s] + %d files under pods/", strings.Join(top, " "), pods)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func roundAll(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(parts, " ")
}

// cpuSample is CPU time used so far by the processes execs make, the
// daemons and the collector:
//
//   - execs: what the containerd shims reaped, i.e. the runc processes a
//     shim starts for each exec and the exec'd commands themselves with
//     everything they waited for (a shim is a subreaper). Nothing else
//     ends up there: a node's own processes are reaped by its systemd.
//   - daemons: dockerd, containerd and the shims' own time.
//   - self: this process with its reaped children (upstream's host tar).
type cpuSample struct{ execs, daemons, self time.Duration }

func (a cpuSample) minus(b cpuSample) cpuSample {
	return cpuSample{a.execs - b.execs, a.daemons - b.daemons, a.self - b.self}
}

// per turns the daemons' time over d into a rate per second; times, back.
// Execs and self have no background to take out.
func (a cpuSample) per(d time.Duration) cpuSample {
	return cpuSample{daemons: time.Duration(float64(a.daemons) * float64(time.Second) / float64(d))}
}

func (a cpuSample) times(d time.Duration) cpuSample {
	return cpuSample{daemons: time.Duration(float64(a.daemons) * float64(d) / float64(time.Second))}
}

func medianCPU(ss []cpuSample) cpuSample {
	pick := func(f func(cpuSample) time.Duration) time.Duration {
		ds := make([]time.Duration, len(ss))
		for i, s := range ss {
			ds[i] = f(s)
		}
		return median(ds)
	}
	return cpuSample{
		execs:   pick(func(s cpuSample) time.Duration { return s.execs }),
		daemons: pick(func(s cpuSample) time.Duration { return s.daemons }),
		self:    pick(func(s cpuSample) time.Duration { return s.self }),
	}
}

// sampleCPU reads a cpuSample from /proc; ok is false when the engine's
// processes are not found (another engine, or in another PID namespace):
// the benchmark then reports no CPU.
func sampleCPU() (s cpuSample, ok bool) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	daemons, shims := 0, 0
	for _, dir := range dirs {
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		shim := strings.HasPrefix(name, "containerd-shim")
		if name != "dockerd" && name != "containerd" && !shim {
			continue
		}
		own, children, found := procCPU(dir)
		if !found {
			continue
		}
		s.daemons += own
		if shim {
			s.execs += children
			shims++
		} else {
			daemons++
		}
	}
	var self, children unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &self) != nil || unix.Getrusage(unix.RUSAGE_CHILDREN, &children) != nil {
		return s, false
	}
	s.self = time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
	return s, daemons >= 2 && shims > 0
}

// procCPU reads /proc/<pid>/stat: own is utime+stime, children is
// cutime+cstime (what it reaped), in USER_HZ (100 per second on Linux).
func procCPU(dir string) (own, children time.Duration, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, 0, false
	}
	var ticks [4]int64 // utime, stime, cutime, cstime: fields 14 to 17
	for j, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		ticks[j] = n
	}
	const tick = 10 * time.Millisecond
	return time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick, true
}
