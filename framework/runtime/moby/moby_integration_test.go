package moby_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// newRuntime connects to the engine at DOCKER_HOST. Integration tests fail,
// never skip, when the engine is missing: CI must not go green without it.
func newRuntime(t testing.TB) *moby.Runtime {
	return runtimetest.Engine(t)
}

// startTestContainer runs the test image with this test's run-id label and
// removes it when the test ends.
func startTestContainer(t testing.TB, r *moby.Runtime, runID string, mutate func(*runtime.ContainerSpec)) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	spec := runtime.ContainerSpec{
		Name:   "capd-e2e-it-" + runID + "-" + runtime.NewRunID()[:6],
		Image:  ref,
		Labels: runtime.RunLabels(runID, "integration-test", nil),
	}
	if mutate != nil {
		mutate(&spec)
	}
	id, err := r.RunContainer(ctx, spec)
	if err != nil {
		t.Fatalf("run test container: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.RemoveContainer(ctx, id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return spec.Name
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestIntegrationExec(t *testing.T) {
	r := newRuntime(t)
	name := startTestContainer(t, r, runtime.NewRunID(), nil)
	ctx := ctxFor(t, time.Minute)

	var stdout, stderr bytes.Buffer
	res, err := r.Exec(ctx, name, runtime.ExecOptions{
		Cmd:    []string{"sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"},
		Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	if res.ExitCode != 3 {
		t.Errorf("exit code = %d, want 3", res.ExitCode)
	}
	if stdout.String() != "to-stdout\n" || stderr.String() != "to-stderr\n" {
		t.Errorf("streams mixed or framed: stdout=%q stderr=%q", stdout.String(), stderr.String())
	}

	// stdin reaches the command and is closed, so cat ends.
	stdout.Reset()
	res, err = r.Exec(ctx, name, runtime.ExecOptions{Cmd: []string{"cat"}, Stdin: strings.NewReader("hello\x00binary\n"), Stdout: &stdout})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec cat: %v, exit %d", err, res.ExitCode)
	}
	if stdout.String() != "hello\x00binary\n" {
		t.Errorf("stdin round trip = %q", stdout.String())
	}

	// Output turns a non-zero exit into an ExitError carrying stderr.
	_, err = runtime.Output(ctx, r, name, "sh", "-c", "echo why-it-failed >&2; exit 7")
	var exitErr *runtime.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode != 7 || !strings.Contains(err.Error(), "why-it-failed") {
		t.Errorf("Output error = %v, want ExitError 7 naming stderr", err)
	}

	// A missing command is reported by the engine's exit code 127 (or an error).
	res, err = r.Exec(ctx, name, runtime.ExecOptions{Cmd: []string{"/no/such/command"}})
	if err == nil && res.ExitCode == 0 {
		t.Errorf("exec of a missing command succeeded")
	}
}

func TestIntegrationExecDeadline(t *testing.T) {
	r := newRuntime(t)
	name := startTestContainer(t, r, runtime.NewRunID(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Exec(ctx, name, runtime.ExecOptions{Cmd: []string{"sleep", "600"}})
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec of a hung command: err = %v, want deadline exceeded", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("exec returned %s after its 1.5s deadline", elapsed)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error %q does not name the container", err)
	}
}

func TestIntegrationInspectLogsKill(t *testing.T) {
	r := newRuntime(t)
	runID := runtime.NewRunID()
	name := startTestContainer(t, r, runID, func(s *runtime.ContainerSpec) { s.PublishPorts = []int{8080} })
	ctx := ctxFor(t, time.Minute)

	d, err := r.InspectContainer(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !d.State.Running || d.Name != name || d.Labels[runtime.LabelRunID] != runID {
		t.Errorf("inspect: running=%v name=%q labels=%v", d.State.Running, d.Name, d.Labels)
	}
	if d.HostPort(8080) == 0 {
		t.Errorf("no host port bound for 8080: %+v", d.Ports)
	}
	// The default network is "bridge" on Docker and "podman" on Podman.
	if len(d.Networks) != 1 {
		t.Errorf("want one network, got %+v", d.Networks)
	}
	for name, ep := range d.Networks {
		if ep.IPv4 == "" || ep.GatewayIPv4 == "" || ep.GatewayIPv4 == ep.IPv4 {
			t.Errorf("want an IPv4 and another gateway on network %s: %+v", name, d.Networks)
		}
	}
	if len(d.Raw) == 0 || !bytes.Contains(d.Raw, []byte(d.ID)) {
		t.Errorf("raw inspect JSON missing")
	}

	// The init script prints once at start; wait (bounded) until it has.
	var stdout, stderr bytes.Buffer
	for deadline := time.Now().Add(10 * time.Second); ; {
		stdout.Reset()
		stderr.Reset()
		if err := r.Logs(ctx, name, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stderr.String(), runtimetest.StderrLine) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.TrimSpace(stdout.String()) != runtimetest.StdoutLine || strings.TrimSpace(stderr.String()) != runtimetest.StderrLine {
		t.Errorf("logs not separated: stdout=%q stderr=%q", stdout.String(), stderr.String())
	}

	if err := r.Kill(ctx, name, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	code, err := r.Wait(ctx, name)
	if err != nil || code != 0 {
		t.Errorf("after SIGTERM: exit %d, %v; want 0 (the script traps TERM)", code, err)
	}
	d, err = r.InspectContainer(ctx, name)
	if err != nil || d.State.Running || d.State.Status != "exited" {
		t.Errorf("after kill: %+v, %v", d.State, err)
	}
	// Exec in a stopped container is a conflict, not a hang.
	_, err = r.Exec(ctx, name, runtime.ExecOptions{Cmd: []string{"true"}})
	if !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("exec in stopped container: %v, want ErrConflict", err)
	}

	// SIGKILL: exit code 137.
	name2 := startTestContainer(t, r, runID, nil)
	if err := r.Kill(ctx, name2, ""); err != nil {
		t.Fatal(err)
	}
	if code, err := r.Wait(ctx, name2); err != nil || code != 137 {
		t.Errorf("after SIGKILL: exit %d, %v; want 137", code, err)
	}
}

func TestIntegrationCopy(t *testing.T) {
	r := newRuntime(t)
	name := startTestContainer(t, r, runtime.NewRunID(), nil)
	ctx := ctxFor(t, time.Minute)

	if _, err := runtime.Output(ctx, r, name, "sh", "-c", "mkdir -p /data/a/b && echo one > /data/a/f1 && echo two > /data/a/b/f2"); err != nil {
		t.Fatal(err)
	}
	rc, err := r.CopyFrom(ctx, name, "/data")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			got[h.Name] = string(b)
		}
	}
	_ = rc.Close()
	want := map[string]string{"data/a/f1": "one\n", "data/a/b/f2": "two\n"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("copied tree: %q = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "in/x.txt", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("abc"))
	_ = tw.Close()
	if err := r.CopyTo(ctx, name, "/tmp", &buf); err != nil {
		t.Fatal(err)
	}
	out, err := runtime.Output(ctx, r, name, "cat", "/tmp/in/x.txt")
	if err != nil || string(out) != "abc" {
		t.Errorf("CopyTo then cat: %q, %v", out, err)
	}

	if _, err := r.CopyFrom(ctx, name, "/no/such/dir"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("CopyFrom missing path: %v, want ErrNotFound", err)
	}
}

func TestIntegrationLabelsNetworksVolumes(t *testing.T) {
	r := newRuntime(t)
	runID := runtime.NewRunID()
	a := startTestContainer(t, r, runID, nil)
	b := startTestContainer(t, r, runID, nil)
	_ = startTestContainer(t, r, runtime.NewRunID(), nil) // another run: must not match
	ctx := ctxFor(t, time.Minute)

	list, err := r.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: runID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != min(a, b) || list[1].Name != max(a, b) {
		t.Errorf("label filter: got %+v, want %s and %s", list, a, b)
	}

	labels := runtime.RunLabels(runID, "integration-test", nil)
	netName := "capd-e2e-it-" + runID
	if _, err := r.CreateNetwork(ctx, netName, labels); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.RemoveNetwork(context.Background(), netName) })
	if err := r.ConnectNetwork(ctx, netName, a); err != nil {
		t.Fatal(err)
	}
	d, _ := r.InspectContainer(ctx, a)
	if _, ok := d.Networks[netName]; !ok {
		t.Errorf("container not on %s after connect: %v", netName, d.Networks)
	}
	if err := r.DisconnectNetwork(ctx, netName, a); err != nil {
		t.Fatal(err)
	}
	nets, err := r.ListNetworks(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: runID}})
	if err != nil || len(nets) != 1 || nets[0].Name != netName {
		t.Errorf("networks by label: %+v, %v", nets, err)
	}

	volName := "capd-e2e-it-" + runID
	if err := r.CreateVolume(ctx, volName, labels); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.RemoveVolume(context.Background(), volName) })
	vols, err := r.ListVolumes(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: runID}})
	if err != nil || len(vols) != 1 || vols[0].Name != volName {
		t.Errorf("volumes by label: %+v, %v", vols, err)
	}
	if err := r.RemoveNetwork(ctx, netName); err != nil {
		t.Error(err)
	}
	if err := r.RemoveVolume(ctx, volName); err != nil {
		t.Error(err)
	}
	if err := r.RemoveVolume(ctx, volName); err != nil {
		t.Errorf("removing a missing volume must not fail: %v", err)
	}
}

func TestIntegrationImageSaveLoad(t *testing.T) {
	r := newRuntime(t)
	ctx := ctxFor(t, 2*time.Minute)
	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := r.InspectImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	copyRef := "capd-e2e.local/roundtrip:" + runtime.NewRunID()
	if err := r.TagImage(ctx, ref, copyRef); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.RemoveImage(context.Background(), copyRef) })

	rc, err := r.SaveImages(ctx, copyRef)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveImage(ctx, copyRef); err != nil {
		t.Fatal(err)
	}
	if _, err := r.InspectImage(ctx, copyRef); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("after remove: %v, want ErrNotFound", err)
	}
	if err := r.LoadImages(ctx, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	loaded, err := r.InspectImage(ctx, copyRef)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.ID != orig.ID || loaded.Labels["e2e.capd.x-k8s.io/test-image"] != "true" {
		t.Errorf("round trip changed the image: %s -> %s, labels %v", orig.ID, loaded.ID, loaded.Labels)
	}

	if err := r.LoadImages(ctx, strings.NewReader("this is not a tar")); err == nil {
		t.Errorf("loading garbage succeeded")
	}

	// A tag without a registry host reads as docker.io/<tag> after a load,
	// on Podman too (which stores it as localhost/<tag> by itself): a kind
	// node that imports the image saved from this engine must find it
	// under the name the kubelet asks for.
	short := "capd-e2e-it/short:" + runtime.NewRunID()
	if err := r.TagImage(ctx, ref, short); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.RemoveImage(context.Background(), short) })
	rc, err = r.SaveImages(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	archive, err = io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveImage(ctx, short); err != nil {
		t.Fatal(err)
	}
	if err := r.LoadImages(ctx, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	if img, err := r.InspectImage(ctx, "docker.io/"+short); err != nil || img.ID != orig.ID {
		t.Errorf("after loading %s: docker.io/%s is %v, %v; want the image", short, short, img.ID, err)
	}
	if _, err := r.InspectImage(ctx, "localhost/"+short); err == nil {
		t.Errorf("after loading %s: localhost/%s exists; want only the Docker name", short, short)
	}
}

func TestIntegrationCommit(t *testing.T) {
	r := newRuntime(t)
	name := startTestContainer(t, r, runtime.NewRunID(), nil)
	ctx := ctxFor(t, time.Minute)
	if _, err := runtime.Output(ctx, r, name, "sh", "-c", "echo baked > /baked.txt"); err != nil {
		t.Fatal(err)
	}
	ref := "capd-e2e.local/committed:" + runtime.NewRunID()
	if _, err := r.Commit(ctx, name, runtime.CommitOptions{
		Ref: ref, Entrypoint: []string{"/bin/cat"}, Cmd: []string{"/baked.txt"}, Labels: map[string]string{"k": "v w"},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.RemoveImage(context.Background(), ref) })
	img, err := r.InspectImage(ctx, ref)
	if err != nil || img.Labels["k"] != "v w" {
		t.Fatalf("committed image: %+v, %v", img, err)
	}
	c2 := startTestContainer(t, r, runtime.NewRunID(), func(s *runtime.ContainerSpec) { s.Image = ref })
	if code, err := r.Wait(ctx, c2); err != nil || code != 0 {
		t.Fatalf("committed image run: exit %d, %v", code, err)
	}
	var out bytes.Buffer
	if err := r.Logs(ctx, c2, &out, nil); err != nil || out.String() != "baked\n" {
		t.Errorf("committed entrypoint output %q, %v", out.String(), err)
	}
}

func TestIntegrationErrors(t *testing.T) {
	r := newRuntime(t)
	ctx := ctxFor(t, time.Minute)
	if _, err := r.InspectContainer(ctx, "capd-e2e-no-such-container"); !errors.Is(err, runtime.ErrNotFound) || !strings.Contains(err.Error(), "capd-e2e-no-such-container") {
		t.Errorf("inspect missing: %v", err)
	}
	if _, err := r.RunContainer(ctx, runtime.ContainerSpec{Name: "capd-e2e-it-noimage", Image: "capd-e2e.local/no-such-image:0"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("run with a missing image: %v, want ErrNotFound", err)
	}
	if err := r.RemoveContainer(ctx, "capd-e2e-no-such-container"); err != nil {
		t.Errorf("remove missing: %v", err)
	}
	info, err := r.Info(ctx)
	if err != nil || info.Version == "" || info.APIVersion == "" || info.Endpoint == "" {
		t.Errorf("info: %+v, %v", info, err)
	}
}

// TestIntegrationNoDaemon checks that a missing or silent engine is reported
// within seconds, naming the endpoint.
func TestIntegrationNoDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	t.Run("no socket", func(t *testing.T) {
		host := "unix:///nonexistent/capd-e2e/docker.sock"
		start := time.Now()
		_, err := moby.New(moby.Config{Host: host})
		if err == nil {
			t.Fatal("connected to a socket that does not exist")
		}
		if !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), host) {
			t.Errorf("error %q: want ErrUnavailable naming %s", err, host)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("took %s", time.Since(start))
		}
	})
	t.Run("silent endpoint", func(t *testing.T) {
		// Accepts connections and never answers: only the deadline ends it.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		host := "tcp://" + ln.Addr().String()
		start := time.Now()
		_, err = moby.New(moby.Config{Host: host, ConnectTimeout: 2 * time.Second})
		elapsed := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("error %v: want ErrUnavailable naming %s", err, host)
		}
		if elapsed > 6*time.Second {
			t.Errorf("took %s with a 2s timeout", elapsed)
		}
	})
}

func TestIntegrationEvents(t *testing.T) {
	r := newRuntime(t)
	ctx := ctxFor(t, time.Minute)
	since := time.Now().Add(-time.Second)
	runID := runtime.NewRunID()
	name := startTestContainer(t, r, runID, nil)
	if err := r.Kill(ctx, name, "KILL"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, name); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Events(ctx, since, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range evs {
		if e.Type == "container" && e.Attributes["name"] == name {
			actions = append(actions, e.Action)
			if e.Time.Before(since.Add(-time.Second)) {
				t.Errorf("event %+v is older than since %s", e, since)
			}
		}
	}
	for _, want := range []string{"create", "start", "die"} {
		if !slices.Contains(actions, want) {
			t.Errorf("events of %s: %v; want %q among them", name, actions, want)
		}
	}
	if _, err := r.Events(ctx, time.Now(), time.Now().Add(-time.Minute)); err == nil {
		t.Error("Events with until before since: no error")
	}
}

func TestIntegrationListImages(t *testing.T) {
	r := newRuntime(t)
	ctx := ctxFor(t, time.Minute)
	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.InspectImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := r.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if img.ID == want.ID {
			if !slices.ContainsFunc(img.RepoTags, func(tag string) bool { return strings.HasSuffix(tag, ref) }) {
				t.Errorf("listed %s with tags %v; want %s among them", img.ID, img.RepoTags, ref)
			}
			return
		}
	}
	t.Errorf("ListImages (%d images) lacks the test image %s (%s)", len(imgs), ref, want.ID)
}

// TestIntegrationFollowLogsAndUser: FollowLogs gets what the container
// prints after it started following, stdout and stderr apart, and
// returns when the container exits; with a deadline, it returns at the
// deadline. The container runs as ContainerSpec.User.
func TestIntegrationFollowLogsAndUser(t *testing.T) {
	r := newRuntime(t)
	runID := runtime.NewRunID()
	name := startTestContainer(t, r, runID, func(s *runtime.ContainerSpec) {
		s.User = "1234:2345"
		s.Entrypoint = []string{"sh", "-c", "id -u; id -g; sleep 2; echo late >&2; sleep 1; echo last"}
	})
	ctx := ctxFor(t, time.Minute)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if err := r.FollowLogs(ctx, name, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("FollowLogs returned after %s, before the container's last line (at 3 s)", took)
	}
	if stdout.String() != "1234\n2345\nlast\n" || stderr.String() != "late\n" {
		t.Errorf("followed stdout %q, stderr %q; want the uid, the gid and last; late", stdout.String(), stderr.String())
	}
	if code, err := r.Wait(ctx, name); err != nil || code != 0 {
		t.Errorf("exit %d, %v", code, err)
	}

	// A container that keeps running: the deadline ends the follow.
	long := startTestContainer(t, r, runID, func(s *runtime.ContainerSpec) {
		s.Entrypoint = []string{"sh", "-c", "echo started; sleep 60"}
	})
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := r.FollowLogs(short, long, &out, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("FollowLogs past its deadline: %v, want DeadlineExceeded", err)
	}
	if out.String() != "started\n" {
		t.Errorf("followed %q before the deadline, want started", out.String())
	}
}
