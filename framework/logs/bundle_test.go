package logs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

// node plays the collection script the way a machine runs it: it reads
// the capd_run, capd_go and capd_copy lines of the script, answers commands from a script map
// and copies from the fake's files (through CopyFrom, which names entries
// as tar -C <parent> <base> does), and writes the same stream the real
// script would. The integration tests run the real script in a container.
type node struct {
	f        *fake.Runtime
	commands script
	// tarStatus overrides the exit code and standard error of the tar of
	// a copied path.
	tarStatus map[string]reply
	// cut ends the stream with an error, as a connection that breaks, a
	// few bytes into the last archive (the commands' output and every
	// status).
	cut bool
	// exitCode is the script's own exit code.
	exitCode int
	// hang makes the script hang after the copies until ctx ends, as a
	// machine without timeout(1) whose command hangs.
	hang bool
}

// words splits one line of the script as sh would, for the quoting
// shellQuote produces.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in, started := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'':
			in, started = !in, true
		case ch == '\\' && !in && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case ch == ' ' && !in:
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(ch)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

type archive struct {
	buf bytes.Buffer
}

// add writes one archive of files (name -> content, in order).
func (a *archive) add(t testing.TB, names []string, files map[string]string) {
	t.Helper()
	tw := tar.NewWriter(&a.buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// GNU tar pads an archive to its 10 KiB record size.
	if pad := a.buf.Len() % 10240; pad != 0 {
		a.buf.Write(make([]byte, 10240-pad))
	}
}

func (n node) exec(t testing.TB) fake.ExecFunc {
	return func(ctx context.Context, container string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
		if len(opts.Cmd) != 3 || opts.Cmd[0] != "sh" || !strings.HasPrefix(opts.Cmd[2], "b=capd-e2e-logs.") {
			return n.commands.exec(ctx, container, opts)
		}
		lines := strings.Split(opts.Cmd[2], "\n")
		root := strings.TrimPrefix(lines[0], "b=")
		var a archive
		ctl := map[string]string{}
		var ctlNames []string
		for _, l := range lines {
			w := words(l)
			if len(w) < 3 || (w[0] != "capd_run" && w[0] != "capd_go" && w[0] != "capd_copy") {
				continue
			}
			i := w[1]
			if w[0] == "capd_run" || w[0] == "capd_go" {
				args := w[3:]
				r, ok := n.commands[strings.Join(args, " ")]
				switch {
				case !ok:
					r = reply{stderr: "sh: " + args[0] + ": not found\n", code: 127}
				case r.block:
					r.code = 124 // timeout(1) stopped it
				case r.err != nil:
					r.code, r.stderr = 1, r.err.Error()
				}
				ctlNames = append(ctlNames, root+"/ctl/"+i+".rc", root+"/ctl/"+i+".err", root+"/out/"+i)
				ctl[root+"/ctl/"+i+".rc"] = fmt.Sprintf("%d 100.00 %s\n", r.code, "100.50")
				ctl[root+"/ctl/"+i+".err"] = r.stderr
				ctl[root+"/out/"+i] = r.stdout
				continue
			}
			p := path.Join(w[3], w[4])
			rc, err := n.f.CopyFrom(ctx, container, p)
			if errors.Is(err, runtime.ErrNotFound) {
				ctlNames = append(ctlNames, root+"/ctl/"+i+".rc")
				ctl[root+"/ctl/"+i+".rc"] = "missing\n"
				continue
			}
			if err != nil {
				t.Errorf("node: copy %s: %v", p, err)
				continue
			}
			mark := root + "/mark/" + i
			a.add(t, []string{mark}, map[string]string{mark: ""})
			_, _ = io.Copy(&a.buf, rc)
			st := n.tarStatus[p]
			ctlNames = append(ctlNames, root+"/ctl/"+i+".rc", root+"/ctl/"+i+".err")
			ctl[root+"/ctl/"+i+".rc"] = fmt.Sprintf("%d 100.00 100.10\n", st.code)
			ctl[root+"/ctl/"+i+".err"] = st.stderr
		}
		if n.hang {
			_, _ = opts.Stdout.Write(a.buf.Bytes())
			<-ctx.Done()
			return runtime.ExecResult{}, fmt.Errorf("exec: %w", ctx.Err())
		}
		copies := a.buf.Len()
		a.add(t, ctlNames, ctl)
		stream := a.buf.Bytes()
		if n.cut {
			_, _ = opts.Stdout.Write(stream[:copies+700])
			return runtime.ExecResult{}, fmt.Errorf("exec: read output: %w", io.ErrUnexpectedEOF)
		}
		if _, err := opts.Stdout.Write(stream); err != nil {
			return runtime.ExecResult{}, err
		}
		return runtime.ExecResult{ExitCode: n.exitCode}, nil
	}
}

func execCalls(f *fake.Runtime) (n int) {
	for _, c := range f.Calls() {
		if c.Method == "Exec" {
			n++
		}
	}
	return n
}

func TestBundleCollectsMachineWithOneExec(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "c1-md-0-abc")
	f.SetExec(node{f: f, commands: healthy()}.exec(t))
	c := &Collector{
		Runtime:          f,
		AdditionalLogs:   []Command{{File: "extra/extra.txt", Cmd: []string{"sh", "-c", "echo extra; echo oops >&2"}}},
		AdditionalCopies: []Copy{{Path: "/etc/hostname", Dest: "hostname"}},
	}
	dir := t.TempDir()
	if err := c.CollectMachine(t.Context(), "c1-md-0-abc", dir); err != nil {
		t.Fatalf("CollectMachine: %v", err)
	}
	if n := execCalls(f); n != 1 {
		t.Errorf("%d execs, want 1", n)
	}
	for _, c := range f.Calls() {
		if c.Method == "CopyFrom" && c.Args[1] != "" && !strings.HasPrefix(c.Args[1], "/") {
			t.Errorf("unexpected copy %v", c.Args)
		}
	}
	assertFiles(t, dir, healthyFiles())
	assertAbsent(t, dir, ErrorsFile, "cloud-init-output.log")
	assertHealthyStderr(t, dir)
}

func TestBundleRecordsEachItemsFailure(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	s := healthy()
	delete(s, "kubelet --version") // not installed: the shell says 127
	s["crictl ps -a"] = reply{stdout: "partial\n", stderr: "connection refused\n", code: 1}
	s[jc] = reply{stdout: "first lines\n", block: true}
	f.SetExec(node{f: f, commands: s, tarStatus: map[string]reply{
		"/var/log/pods":    {code: 1, stderr: "tar: pods/a/0.log: file changed as we read it\n"},
		"/run/cluster-api": {code: 2, stderr: "tar: cluster-api/x: Cannot open: Permission denied\n"},
	}}.exec(t))
	c := &Collector{Runtime: f, CommandTimeout: 30 * time.Second,
		AdditionalCopies: []Copy{{Path: "/etc/nope", Dest: "nope"}, {Path: "/etc/maybe", Dest: "maybe", Optional: true}}}
	dir := t.TempDir()

	err := c.CollectMachine(t.Context(), "m1", dir)
	if err == nil || !strings.Contains(err.Error(), "5 of 14 steps failed") {
		t.Fatalf("error = %v, want 5 of 14 steps failed", err)
	}
	fs := failuresByOutput(t, dir)
	if len(fs) != 5 {
		t.Errorf("errors file has %d entries, want 5: %+v", len(fs), fs)
	}
	kv := fs["kubelet-version.txt"]
	if kv.ExitCode == nil || *kv.ExitCode != 127 || !strings.Contains(kv.Stderr, "not found") || !strings.Contains(kv.Error, "could not be started") ||
		!slices.Equal(kv.Command, []string{"kubelet", "--version"}) || kv.Duration != "500ms" {
		t.Errorf("kubelet-version.txt failure = %+v", kv)
	}
	if ps := fs["crictl-ps.txt"]; ps.ExitCode == nil || *ps.ExitCode != 1 || ps.Stderr != "connection refused\n" {
		t.Errorf("crictl-ps.txt failure = %+v", ps)
	}
	if j := fs["journal.log"]; j.Error != "timed out after 30s" || j.ExitCode != nil {
		t.Errorf("journal.log failure = %+v", j)
	}
	if b := fs["bootstrap"]; b.ExitCode == nil || *b.ExitCode != 2 || !strings.Contains(b.Stderr, "Permission denied") || b.Path != "/run/cluster-api" {
		t.Errorf("bootstrap failure = %+v", b)
	}
	if n := fs["nope"]; !strings.Contains(n.Error, "/etc/nope does not exist") {
		t.Errorf("nope failure = %+v", n)
	}
	// A log appended to while tar read it is a warning, not a failure.
	if _, ok := fs["pods"]; ok {
		t.Errorf("pods failed: %+v", fs["pods"])
	}
	if got := readFile(t, filepath.Join(dir, StderrFile)); !strings.Contains(got, "==> pods: tar of /var/log/pods <==\ntar: pods/a/0.log: file changed") {
		t.Errorf("%s = %q, want the tar warning under the copy's header", StderrFile, got)
	}
	assertAbsent(t, dir, "kubelet-version.txt", "maybe", "nope")
	assertFiles(t, dir, map[string]string{
		"crictl-ps.txt":                          "partial\n",
		"journal.log":                            "first lines\n",
		"kern.log":                               "kernel: hello\n",
		"pods/kube-system_etcd-x_123/etcd/0.log": "etcd log\n",
		"bootstrap/capd.bootstrap.started":       "started\n",
	})
}

func TestBundleStreamCutKeepsWhatArrived(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	f.SetExec(node{f: f, commands: healthy(), cut: true}.exec(t))
	c := &Collector{Runtime: f}
	dir := t.TempDir()
	err := c.CollectMachine(t.Context(), "m1", dir)
	if err == nil {
		t.Fatal("want an error")
	}
	fs := failuresByOutput(t, dir)
	if !strings.Contains(fs["."].Error, "collection script") || !strings.Contains(fs["."].Error, "unexpected EOF") {
		t.Errorf("script failure = %+v", fs["."])
	}
	if !strings.Contains(fs["crictl-ps.txt"].Error, "not received") {
		t.Errorf("crictl-ps.txt failure = %+v, want not received", fs["crictl-ps.txt"])
	}
	// The copies' content came before the cut; their status did not.
	if e := fs["pods"].Error; !strings.Contains(e, "the end of the copy was not received (what arrived is kept)") {
		t.Errorf("pods failure = %q", e)
	}
	assertFiles(t, dir, map[string]string{"pods/kube-system_etcd-x_123/etcd/0.log": "etcd log\n"})
	assertAbsent(t, dir, "crictl-ps.txt")
}

func TestBundleFallsBackWithoutShell(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	f.SetExec(healthy().exec) // "sh -c <script>" is not found: exit 127
	dir := t.TempDir()
	if err := (&Collector{Runtime: f}).CollectMachine(t.Context(), "m1", dir); err != nil {
		t.Fatal(err)
	}
	if n := execCalls(f); n != 8 {
		t.Errorf("%d execs, want the script then the 7 commands", n)
	}
	assertFiles(t, dir, map[string]string{"kern.log": "kernel: hello\n", "pods/kube-system_etcd-x_123/etcd/0.log": "etcd log\n"})
	if got := readFile(t, filepath.Join(dir, StderrFile)); !strings.Contains(got, "collection script could not run (exited with code 127); collected step by step") {
		t.Errorf("%s = %q, want the fallback noted", StderrFile, got)
	}
}

func TestBundleUnsafeCopyEntries(t *testing.T) {
	t.Parallel()
	f := fake.New()
	f.AddContainer(fake.Container{
		ContainerDetails: runtime.ContainerDetails{Name: "evil", Raw: []byte(`{}`)},
		Files: map[string][]byte{
			"/var/log/pods/ok/0.log":         []byte("fine\n"),
			"/var/log/pods/../../../escaped": []byte("gotcha\n"),
		},
	})
	f.SetExec(node{f: f, commands: healthy()}.exec(t))
	root := t.TempDir()
	dir := filepath.Join(root, "out")
	_ = (&Collector{Runtime: f}).CollectMachine(t.Context(), "evil", dir)
	assertFiles(t, dir, map[string]string{"pods/ok/0.log": "fine\n"})
	if _, err := os.Stat(filepath.Join(root, "escaped")); err == nil {
		t.Error("escaped was written")
	}
	if e := failuresByOutput(t, dir)["pods"].Error; !strings.Contains(e, "skipped 1 tar entries with unsafe names") {
		t.Errorf("pods failure = %q", e)
	}
}

func TestBundleScriptQuoting(t *testing.T) {
	t.Parallel()
	c := &Collector{AdditionalLogs: []Command{{File: "q.txt", Cmd: []string{"sh", "-c", `echo 'it'"'"'s' $HOME; rm -rf /`}}}}
	b := c.newBundle(t.TempDir(), c.machineSteps()[1:])
	var found bool
	for l := range strings.Lines(b.script) {
		w := words(strings.TrimSpace(l))
		if len(w) > 3 && w[0] == "capd_run" && w[3] == "sh" {
			found = true
			if got := w[5]; got != `echo 'it'"'"'s' $HOME; rm -rf /` {
				t.Errorf("argument round trip = %q", got)
			}
		}
	}
	if !found {
		t.Errorf("no run line for the additional command in:\n%s", b.script)
	}
}

func TestBundleTimeout(t *testing.T) {
	t.Parallel()
	c := &Collector{CommandTimeout: 10 * time.Second,
		AdditionalLogs: []Command{{File: "slow", Cmd: []string{"x"}, Timeout: time.Minute}}}
	steps := c.machineSteps()[1:] // without the container's own log
	// The 8 commands go round robin into 2 lanes; the second lane has
	// kern.log, containerd.log, containerd-info.txt (10s each) and the
	// slow one (1m), longer than the first (4 × 10s) and than the copies
	// (3 × 10s in a row); plus 10s for the end.
	if got := c.newBundle(t.TempDir(), steps).timeout; got != 100*time.Second {
		t.Errorf("timeout = %s, want 1m40s", got)
	}
}

func TestParseStatusAndTimedOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		code int
		took time.Duration
		ok   bool
	}{
		{"0 12.34 12.56", 0, 220 * time.Millisecond, true},
		{"127", 127, 0, true},
		{"1  ", 1, 0, true},
		{"", 0, 0, false},
		{"missing", 0, 0, false},
	} {
		code, took, ok := parseStatus(tc.in)
		if code != tc.code || took != tc.took || ok != tc.ok {
			t.Errorf("parseStatus(%q) = %d, %s, %v", tc.in, code, took, ok)
		}
	}
	if !timedOut(124, 0, time.Minute) || !timedOut(137, time.Minute, time.Minute) || timedOut(137, time.Second, time.Minute) || timedOut(1, time.Hour, time.Minute) {
		t.Error("timedOut misclassifies")
	}
}

func TestBundleHungScriptIsBounded(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	f.SetExec(node{f: f, commands: healthy(), hang: true}.exec(t))
	dir := t.TempDir()
	start := time.Now()
	err := (&Collector{Runtime: f, CommandTimeout: 100 * time.Millisecond}).CollectMachine(t.Context(), "m1", dir)
	// The longer lane (4 commands of 100ms in a row) or the 3 copies in a
	// row (300ms), plus 100ms for the last archive.
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("collection took %s", elapsed)
	}
	if err == nil {
		t.Fatal("want an error")
	}
	fs := failuresByOutput(t, dir)
	if e := fs["journal.log"].Error; !strings.Contains(e, "not received: timed out after 500ms") {
		t.Errorf("journal.log failure = %q", e)
	}
	if e := fs["."].Error; !strings.Contains(e, "collection script: timed out after 500ms") {
		t.Errorf("script failure = %q", e)
	}
	// The copies came before the hang.
	assertFiles(t, dir, map[string]string{"pods/kube-system_etcd-x_123/etcd/0.log": "etcd log\n", "container-stdout.log": "systemd booting\n"})
}
