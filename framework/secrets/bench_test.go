package secrets

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// logCorpus returns about size bytes of log lines of the sorts a machine's
// folder holds: journal, kubelet (klog), containerd (logfmt), pod logs.
func logCorpus(rng *rand.Rand, size int) []byte {
	var b bytes.Buffer
	for b.Len() < size {
		i := rng.IntN(1 << 20)
		switch rng.IntN(5) {
		case 0:
			fmt.Fprintf(&b, "Jan 02 15:%02d:%02d.%06d c1-md-0-x7k2p kubelet[812]: I0102 15:04:05.%06d     812 kubelet.go:%d] \"SyncLoop (PLEG): event for pod\" pod=\"kube-system/kube-proxy-%05x\" event={\"ID\":\"%08x-1c2d-4e5f-8a9b-0c1d2e3f4a5b\",\"Type\":\"ContainerStarted\",\"Data\":\"%016x\"}\n", i%60, i%59, i, i, 2400+i%100, i, i, i)
		case 1:
			fmt.Fprintf(&b, "Jan 02 15:%02d:%02d.%06d c1-md-0-x7k2p containerd[301]: time=\"2025-01-02T15:04:05.%09dZ\" level=info msg=\"StartContainer for \\\"%016x\\\" returns successfully\" runtime=io.containerd.runc.v2\n", i%60, i%59, i, i, i)
		case 2:
			fmt.Fprintf(&b, "I0102 15:04:05.%06d       1 reflector.go:%d] \"Caches populated\" type=\"*v1.Node\" reflector=\"k8s.io/client-go@v0.36.3/tools/cache/reflector.go:%d\" resourceVersion=%d\n", i, 300+i%50, 200+i%9, i)
		case 3:
			fmt.Fprintf(&b, "2025-01-02T15:04:05.%09dZ stderr F I0102 15:04:05.%06d       1 server_others.go:%d] \"Using iptables proxy\" node=\"c1-md-0-x7k2p\" ip=\"172.18.0.%d\" version=v1.36.3 --cluster-cidr=192.168.0.0/16 --v=2\n", i, i, 100+i%20, i%250)
		default:
			fmt.Fprintf(&b, "Jan 02 15:%02d:%02d.%06d c1-md-0-x7k2p kernel: IPv6: ADDRCONF(NETDEV_CHANGE): veth%07x: link becomes ready; mounted /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/%d/fs\n", i%60, i%59, i, i, i)
		}
	}
	return b.Bytes()
}

// buildLargeTree writes about 3000 files and 220 MB of artifacts under dir,
// mostly logs, with a few secrets, and returns the total size and the files
// that hold secrets with their content.
func buildLargeTree(tb testing.TB, dir string) (int64, map[string][]byte) {
	tb.Helper()
	m := testMaterial(tb)
	rng := rand.New(rand.NewPCG(1, 2))
	corpus := logCorpus(rng, 1<<20)
	var total int64
	secrets := map[string][]byte{}
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
		total += int64(len(data))
	}
	// logOf returns size bytes of corpus, cut at a line.
	logOf := func(size int) []byte {
		var b bytes.Buffer
		for b.Len() < size {
			off := rng.IntN(len(corpus) / 2)
			off += bytes.IndexByte(corpus[off:], '\n') + 1
			b.Write(corpus[off:min(len(corpus), off+size-b.Len())])
		}
		if i := bytes.LastIndexByte(b.Bytes(), '\n'); i >= 0 {
			b.Truncate(i + 1)
		}
		return b.Bytes()
	}
	for mi := range 30 {
		md := fmt.Sprintf("clusters/c1/machines/c1-md-0-%02d", mi)
		journal := logOf(3500 << 10)
		// One join line per machine, in the middle of its journal.
		mid := bytes.IndexByte(journal[len(journal)/2:], '\n') + len(journal)/2 + 1
		join := []byte("Jan 02 16:00:00.000000 c1 cloud-init[812]: kubeadm join 172.18.0.3:6443 --token " + bootstrapToken() + " --discovery-token-ca-cert-hash " + m.Hash + "\n")
		journal = append(append(append([]byte(nil), journal[:mid]...), join...), journal[mid:]...)
		write(md+"/journal.log", journal)
		secrets[md+"/journal.log"] = journal
		write(md+"/kubelet.log", logOf(1500<<10))
		write(md+"/containerd.log", logOf(800<<10))
		write(md+"/kern.log", logOf(200<<10))
		write(md+"/inspect.json", []byte(fmt.Sprintf(`[{"Id": "%x", "Config": {"Cmd": ["/usr/local/bin/entrypoint", "/sbin/init"], "Env": ["container=docker"]}}]`+"\n", mi)))
		write(md+"/crictl-ps.txt", logOf(4<<10))
		for p := range 60 {
			write(fmt.Sprintf("%s/pods/kube-system_pod-%02d/container/0.log", md, p), logOf(20<<10))
		}
	}
	for r := range 1000 {
		y := fmt.Sprintf("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata:\n  name: m-%d\n  namespace: default\nspec:\n  bootstrap:\n    dataSecretName: m-%d\n  clusterName: c1\n  version: v1.36.3\nstatus:\n  phase: Running\n", r, r)
		data := bytes.Repeat([]byte(y), 30)
		name := fmt.Sprintf("clusters/bootstrap/resources/default/Machine/m-%d.yaml", r)
		if r%100 == 0 {
			data = append(data, "---\nkind: KubeadmConfig\nspec:\n  joinConfiguration:\n    discovery:\n      bootstrapToken:\n        token: "+bootstrapToken()+"\n"...)
			secrets[name] = data
		}
		write(name, data)
	}
	return total, secrets
}

func BenchmarkScanTree(b *testing.B) {
	root := b.TempDir()
	total, secrets := buildLargeTree(b, root)
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep, err := ScanTree(root)
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Findings) != len(secrets) {
			b.Fatalf("%d findings, want %d", len(rep.Findings), len(secrets))
		}
		b.ReportMetric(float64(rep.Files), "files")
	}
}

func BenchmarkRedactTree(b *testing.B) {
	root := b.TempDir()
	total, secrets := buildLargeTree(b, root)
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for name, data := range secrets {
			if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		rep, err := RedactTree(root)
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Redacted) != len(secrets) {
			b.Fatalf("%d files redacted, want %d", len(rep.Redacted), len(secrets))
		}
	}
}

// TestScanTreeStreams checks that a large file is read as a stream: what
// a scan allocates does not grow with the file.
func TestScanTreeStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MB")
	}
	root := t.TempDir()
	corpus := logCorpus(rand.New(rand.NewPCG(3, 4)), 1<<20)
	f, err := os.Create(filepath.Join(root, "journal.log"))
	if err != nil {
		t.Fatal(err)
	}
	for range 64 {
		if _, err := f.Write(corpus); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rep, err := ScanTree(root)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bytes != 64*int64(len(corpus)) || len(rep.Findings) != 0 {
		t.Fatalf("read %d bytes, found %v", rep.Bytes, rep.Findings)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("scanning 64 MB allocated %d bytes", alloc)
	}
}

// BenchmarkScan measures the engine alone, on text in memory.
func BenchmarkScan(b *testing.B) {
	data := logCorpus(rand.New(rand.NewPCG(5, 6)), 16<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if fs := Scan(data); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}
