//go:build bench

package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// BenchmarkBoot (`make bench-boot`): how long a machine takes from create
// to a running containerd, for one or more node images (IMAGES, default
// the node image of KUBERNETES_VERSION in config/e2e.yaml), in rounds
// (-benchtime Nx: N rounds), images interleaved within a round so both see the same
// machine. Each round creates a container as CAPD v1.14 does (privileged,
// a private cgroup namespace, tmpfs /tmp and /run, an anonymous volume at
// /var, /lib/modules read-only, a tty for systemd's status lines) and
// times:
//
//	create      the engine creates it (copying the image's /var into the volume)
//	start       the engine starts it
//	multi-user  until its output says "Reached target ... Multi-User System"
//	            (CAPD's check before it bootstraps)
//	crictl      until `crictl ps` answers (CAPD's second check)
//	unpack      `ctr images mount` of the kube-apiserver and etcd images,
//	            the first unpack of what a control plane starts first
//	net unpack  then of kube-proxy's and kube-router's, which every node
//	            starts first (the node is NotReady until kube-router runs)
//
// and the size of /var then, and reports each column's median per image.
// It drives the engine through the docker CLI: it measures the engine
// with CAPD's container options, some of which (the cgroup namespace, the
// tty, the security options) the harness's runtime does not expose. Its
// containers carry the harness's run labels, so `make clean-e2e` reaps
// them after a killed run.
func BenchmarkBoot(b *testing.B) {
	cfg, err := config.Load(filepath.Join(repoRoot(b), "config/e2e.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	version := cfg.Variables["KUBERNETES_VERSION"]
	images := strings.Fields(envOr("IMAGES", "kindest/node:"+version))
	for _, img := range images {
		if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", img).CombinedOutput(); err != nil {
			b.Fatalf("no image %s (make images): %v: %s", img, err, out)
		}
	}
	runID := runtime.NewRunID()
	var labels []string
	for k, v := range runtime.RunLabels(runID, "bench-boot", nil) {
		labels = append(labels, "--label", k+"="+v)
	}
	columns := []string{"create s", "start s", "multi-user s", "crictl s", "unpack s", "net unpack s", "/var MB"}
	samples := map[string][][]float64{} // image → column → rounds
	for i := 0; b.Loop(); i++ {
		for _, img := range images {
			row := bootRound(b, img, fmt.Sprintf("capd-e2e-bench-boot-%s-%d", runID, i), version, labels)
			b.Logf("%s round %d: %v", img, i+1, row)
			if samples[img] == nil {
				samples[img] = make([][]float64, len(columns))
			}
			for c, v := range row {
				samples[img][c] = append(samples[img][c], v)
			}
		}
	}
	t := Table{Header: append([]string{fmt.Sprintf("image (median of %d)", b.N)}, columns...)}
	for _, img := range images {
		cells := []string{img}
		for c := range columns {
			m := Median(samples[img][c])
			cells = append(cells, strconv.FormatFloat(m, 'f', 2, 64))
			name := strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(columns[c], " s"), " MB"), "/")
			b.ReportMetric(m, strings.ReplaceAll(name, " ", "-")+"-"+unitOf(columns[c]))
		}
		t.Add(cells...)
	}
	writeResults(b, outDir(b, "boot"), fmt.Sprintf("# machine boot, %s\n\n%s", Host(), t))
}

var multiUser = regexp.MustCompile(`Reached target .*Multi-User System`)

func unitOf(column string) string {
	if strings.HasSuffix(column, " MB") {
		return "MB"
	}
	return "s"
}

// bootRound boots one machine of img and returns its columns.
func bootRound(b *testing.B, img, name, version string, labels []string) []float64 {
	b.Helper()
	docker := func(args ...string) (string, error) {
		out, err := exec.CommandContext(b.Context(), "docker", args...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return string(out), nil
	}
	must := func(args ...string) string {
		out, err := docker(args...)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	// waitFor polls every 100 ms until ok, for at most d.
	waitFor := func(what string, d time.Duration, ok func() bool) {
		deadline := time.Now().Add(d)
		for !ok() {
			if time.Now().After(deadline) {
				b.Fatalf("%s: not after %s", what, d)
			}
			select {
			case <-b.Context().Done():
				b.Fatal(b.Context().Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	rmCtx := cleanupCtx(b)
	b.Cleanup(func() {
		// Gone already after a round that ended: an error then says so.
		_ = exec.CommandContext(rmCtx, "docker", "rm", "-f", "-v", name).Run()
	})
	t0 := time.Now()
	must(append(append([]string{"create", "-t", "--name", name}, labels...), "--privileged", "--cgroupns=private",
		"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		"--tmpfs", "/tmp", "--tmpfs", "/run", "-v", "/var", "-v", "/lib/modules:/lib/modules:ro", "--hostname", name, img)...)
	t1 := time.Now()
	must("start", name)
	t2 := time.Now()
	waitFor("multi-user target", 2*time.Minute, func() bool {
		out, _ := docker("logs", name) // not yet readable: poll again
		return multiUser.MatchString(out)
	})
	t3 := time.Now()
	waitFor("crictl ps", time.Minute, func() bool { _, err := docker("exec", name, "crictl", "ps"); return err == nil })
	t4 := time.Now()
	first := func(prefix string) string {
		for _, ref := range strings.Fields(must("exec", name, "ctr", "-n", "k8s.io", "images", "list", "-q")) {
			if strings.Contains(ref, prefix) {
				return ref
			}
		}
		b.Fatalf("%s holds no image matching %q", img, prefix)
		return ""
	}
	mount := func(refs ...string) {
		var sh []string
		for _, ref := range refs {
			dir := "/tmp/" + strings.NewReplacer("/", "_", ":", "_").Replace(ref)
			sh = append(sh, fmt.Sprintf("mkdir -p %s && ctr -n k8s.io images mount %s %s", dir, ref, dir))
		}
		must("exec", name, "sh", "-c", strings.Join(sh, " && "))
	}
	etcd := first("registry.k8s.io/etcd:")
	mount("registry.k8s.io/kube-apiserver:"+version, etcd)
	t5 := time.Now()
	router := first("/kube-router:")
	mount("registry.k8s.io/kube-proxy:"+version, router)
	t6 := time.Now()
	mb, err := strconv.ParseFloat(strings.Fields(must("exec", name, "du", "-sxm", "/var"))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	must("rm", "-f", "-v", name)
	s := func(a, z time.Time) float64 { return z.Sub(a).Seconds() }
	return []float64{s(t0, t1), s(t1, t2), s(t2, t3), s(t3, t4), s(t4, t5), s(t5, t6), mb}
}
