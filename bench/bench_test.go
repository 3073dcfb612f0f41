package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/summary"
)

func TestMedianAndTable(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	tab := Table{Header: []string{"a", "b"}}
	tab.Add("1", "2")
	if got, want := tab.String(), "| a | b |\n|---|---|\n| 1 | 2 |\n"; got != want {
		t.Errorf("Table = %q, want %q", got, want)
	}
	if got := MinSec(125*time.Second + 400*time.Millisecond); got != "2m05s" {
		t.Errorf("MinSec = %q", got)
	}
}

func TestBuiltStepsAndPhases(t *testing.T) {
	log := `images: building 3 steps
[1/3] rootfs/node: building capd-e2e/debian-node:trixie (not in the engine)
[1/3] rootfs/node: built in 3m37.2s (cpu 1m8.8s)
[2/3] haproxy: built in 12.1s
[3/3] kind-base: failed after 1s
`
	steps, err := BuiltSteps(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{"rootfs/node", "3m37.2s", "1m8.8s"}, {"haproxy", "12.1s", ""}}
	if !slices.Equal(steps, want) {
		t.Errorf("BuiltSteps = %+v, want %+v", steps, want)
	}
}

func TestReadGoBuild(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	old := "# in x\n# env CGO_ENABLED=1\n# go build -o /old/ ./old\n"
	if err := os.WriteFile(filepath.Join(logs, "a.log"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(logs, "a.log"), past, past); err != nil {
		t.Fatal(err)
	}
	newest := "# in " + dir + "\n# env CGO_ENABLED=0 GOGC=400 'GOFLAGS=-mod=mod -trimpath'\n" +
		"# /usr/local/go/bin/go build -trimpath -gcflags all=-dwarf=false -ldflags '-s -w -X '\\''p.v=1'\\''' -tags a,b -o /out/ ./cmd/x ./cmd/y\nbuild output\n"
	if err := os.WriteFile(filepath.Join(logs, "b.log"), []byte(newest), 0o644); err != nil {
		t.Fatal(err)
	}
	// A module download's log, newer, is passed over.
	if err := os.WriteFile(filepath.Join(logs, "b-download.log"), []byte("# in x\n# env GOGC=1\n# go list -deps ./x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(logs, "b-download.log"), future, future); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGoBuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"CGO_ENABLED=0", "GOGC=400", "GOFLAGS=-mod=mod -trimpath"}; !slices.Equal(g.Env, want) {
		t.Errorf("Env = %q, want %q (the newest log's)", g.Env, want)
	}
	if want := "-s -w -X 'p.v=1'"; !slices.Contains(g.Args, want) {
		t.Errorf("Args = %q: no %q (quoting undone)", g.Args, want)
	}
	if got := g.EnvWithout("GOGC"); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "GOGC=") }) {
		t.Errorf("EnvWithout(GOGC) = %q", got)
	}
	moved := g.WithOutput("/side/bin")
	if moved.Output() != "/side/bin/" || g.Output() != "/out/" {
		t.Errorf("WithOutput: %q (was %q); want /side/bin/, the original unchanged", moved.Output(), g.Output())
	}
	nodwarf := g.Without("-gcflags", "all=-dwarf=false").With("-gcflags=all=-dwarf=false")
	if want := []string{"/usr/local/go/bin/go", "build", "-gcflags=all=-dwarf=false", "-trimpath", "-ldflags"}; !slices.Equal(nodwarf.Args[:5], want) {
		t.Errorf("nodwarf = %q, want it to start %q", nodwarf.Args, want)
	}
	if notags := g.Without("-tags", ""); slices.Contains(notags.Args, "-tags") || slices.Contains(notags.Args, "a,b") {
		t.Errorf("Without(-tags) = %q", notags.Args)
	}

	for _, l := range []string{"a.log", "b.log"} {
		if err := os.WriteFile(filepath.Join(logs, l), []byte("# in x\n# go build ./x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadGoBuild(dir); err == nil || !strings.Contains(err.Error(), "'# env'") {
		t.Errorf("logs without their env line: %v", err)
	}
	if _, err := ReadGoBuild(t.TempDir()); err == nil || !strings.Contains(err.Error(), "make images") {
		t.Errorf("no logs: %v", err)
	}
}

func TestSpecSpan(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for name, s := range map[string]summary.Summary{
		"a": {Spec: "quick-start", Result: summary.ResultPassed, Start: t0, Duration: 5 * time.Minute},
		"b": {Spec: "quick-start", Result: summary.ResultFailed, Start: t0.Add(time.Minute), Duration: 6 * time.Minute},
		"c": {Spec: "md-rollout", Result: summary.ResultPassed, Start: t0.Add(-time.Hour), Duration: 3 * time.Hour},
	} {
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "clusters", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "clusters", name, summary.JSONFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	passed, ran, span, err := SpecSpan(dir, "quick-start")
	if err != nil || passed != 1 || ran != 2 || span != 7*time.Minute {
		t.Errorf("SpecSpan = %d of %d, %v, %v; want 1 of 2 over 7m0s (the other spec left out)", passed, ran, span, err)
	}
}

// TestE2EReport runs the report over a run's artifacts laid out as the
// suite writes them, with one line of each log it reads.
func TestE2EReport(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp := "clusters/qs-1/machines/qs-1-x7k2p-abc" // a topology name: no "control-plane" in it
	write("run.log", "setup: kind cluster done in 19.5s\nRan 1 of 12 Specs in 201.3 seconds\n")
	write("junit.e2e_suite.1.xml", `<testsuites><testsuite><testcase name="[SynchronizedBeforeSuite]" status="passed" time="60"></testcase>`+
		`<testcase name="[It] quick-start works [PR-Blocking]" status="passed" time="141.2"></testcase><testcase name="other" status="skipped" time="0"></testcase></testsuite></testsuites>`)
	write("clusters/qs-1/summary.txt", "  +1m2s   31s   passed   wait for control plane initialized\n")
	write("clusters/bootstrap/logs/capi-kubeadm-control-plane-system/kcp/manager/manager.log",
		`E1206 10:00:05.123456 1 x.go:1] "Connect failed" err="kubeconfig secret default/qs-1-kubeconfig not found" Cluster="default/qs-1"`+"\n"+
			`I1206 10:00:35.223456 1 x.go:1] "Connected" Cluster="default/qs-1"`+"\n"+
			`I1206 10:00:36.000000 1 x.go:1] "Connected" Cluster="default/qs-10"`+"\n")
	write("clusters/bootstrap/logs/capd-system/capd/manager/manager.log", `I1206 10:00:01.512345 1 x.go:1] "Running boostrap command" DevMachine="default/qs-1-x7k2p-abc" command="kubeadm init"`+"\n")
	write(cp+"/pods/kube-system_kube-apiserver-x/kube-apiserver/0.log", "2026-12-06T10:00:20.345678Z stderr F I1206 Serving securely on [::]:6443\n")
	write(cp+"/pods/kube-system_etcd-x/etcd/0.log", "2026-12-06T10:00:10.456Z stderr F {}\n")
	write(cp+"/kubelet.log", `Dec 06 10:00:12.567890 node kubelet[1]: E1206 "failed to ensure that the pod: cgroups exist and are correctly applied" pod="kube-system/etcd-qs-1-x7k2p-abc"`+"\n"+
		"Dec 06 10:00:30.111111 node kubelet[1]: I1206 Successfully registered node\n")
	write(cp+"/pods/kube-system_kube-router-y/kube-router/0.log", "2026-12-06T10:00:40.100Z stderr F start\n"+
		`2026-12-06T10:01:02.300Z stderr F time="x" level=info msg="Peer Up" Key=172.18.0.5 State=x`+"\n")
	write(cp+"/inspect.json", `{"NetworkSettings":{"Networks":{"kind":{"IPAddress":"172.18.0.4"}}}}`)

	got := E2EReport("pr", dir, filepath.Join(dir, "run.log"), "")
	for _, want := range []string{
		"suite: Ran 1 of 12 Specs in 201.3 seconds",
		"| kind cluster | 19.5s |",
		"| [It] quick-start works [PR-Blocking] | passed | 141.2 |",
		"| qs-1 | 10:00:05.1 failed, no kubeconfig Secret yet; 10:00:35.2 connected | 10:00:01.5 | 10:00:10.4 | 10:00:20.3 | kube-system/etcd 10:00:12.5 | 31s |",
		"| qs-1 | qs-1-x7k2p-abc (172.18.0.4) | 10:00:30.1 | 10:00:40.1 |  |  | 172.18.0.5 10:01:02.3 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, notWant := range []string{"SynchronizedBeforeSuite", "| other |", "10:00:36"} {
		if strings.Contains(got, notWant) {
			t.Errorf("report holds %q (a suite node, a skipped spec, another cluster's connection):\n%s", notWant, got)
		}
	}
}

// A SIGINT to the benchmark (a terminal's Ctrl-C) ends the command Run
// started in its own process group, and everything in that group.
func TestCmdRunEndsOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	pidFile := filepath.Join(dir, "pid")
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- Cmd{Log: log, Args: []string{"sh", "-c", `sleep 60 & echo $! >` + pidFile + `; echo started; wait`}}.Run(context.Background(), 5*time.Second)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(log); strings.Contains(string(b), "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start in 10s")
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("Run returned no error for an interrupted command")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15s of SIGINT")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run took %s", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %d still runs", pid)
		}
	}
}
