package moby

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testID  = "1111111111111111111111111111111111111111111111111111111111111111"
	otherID = "2222222222222222222222222222222222222222222222222222222222222222"

	// What Docker and Podman answer when a container did not die of SIGKILL.
	dockerKillNotSeen = `cannot remove container "/c1": could not kill: tried to kill container, but did not receive an exit event`
	podmanKillNotSeen = "cannot remove container " + testID + " as it could not be stopped: given PIDs did not die within timeout"
)

// group makes a fake cgroup directory with the given files.
func group(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func fileIs(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != want {
		t.Errorf("%s = %q, want %q", path, got, want)
	}
}

func frozenV1() map[string]string   { return map[string]string{"freezer.state": "FROZEN\n"} }
func thawedV1() map[string]string   { return map[string]string{"freezer.state": "THAWED\n"} }
func freezingV1() map[string]string { return map[string]string{"freezer.state": "FREEZING\n"} }

func TestThawFrozen(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{
		"docker/" + testID,                          // Docker, cgroupfs driver
		"system.slice/docker-" + testID + ".scope",  // Docker, systemd driver
		"machine.slice/libpod-" + testID + ".scope", // Podman, systemd
		"libpod_parent/libpod-" + testID,            // Podman, cgroupfs
	} {
		t.Run(strings.SplitN(layout, "/", 2)[0], func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			c := filepath.Join(root, "freezer", layout)
			group(t, c, thawedV1())
			group(t, filepath.Join(c, "kubelet.slice"), freezingV1())
			group(t, filepath.Join(c, "kubelet.slice", "pod", "cri-containerd-x.scope"), frozenV1())
			group(t, filepath.Join(c, "kubelet.slice", "running"), thawedV1())
			// Another container's frozen group (a paused one, say) is not ours.
			other := filepath.Join(root, "freezer", "docker", otherID, "x")
			group(t, other, frozenV1())

			thawed, err := thawer{cgroupRoot: root}.thaw(testID)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(c, "kubelet.slice"), filepath.Join(c, "kubelet.slice", "pod", "cri-containerd-x.scope")}
			if strings.Join(thawed, " ") != strings.Join(want, " ") {
				t.Errorf("thawed %q, want %q (parents first)", thawed, want)
			}
			fileIs(t, filepath.Join(want[0], "freezer.state"), "THAWED")
			fileIs(t, filepath.Join(want[1], "freezer.state"), "THAWED")
			fileIs(t, filepath.Join(other, "freezer.state"), "FROZEN")
		})
	}
}

func TestThawUnified(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	group(t, root, map[string]string{"cgroup.controllers": "cpu memory pids\n"})
	c := filepath.Join(root, "system.slice", "docker-"+testID+".scope")
	group(t, c, map[string]string{"cgroup.freeze": "0\n"})
	group(t, filepath.Join(c, "frozen"), map[string]string{"cgroup.freeze": "1\n"})
	thawed, err := thawer{cgroupRoot: root}.thaw(testID)
	if err != nil {
		t.Fatal(err)
	}
	if len(thawed) != 1 || thawed[0] != filepath.Join(c, "frozen") {
		t.Errorf("thawed %q, want only %s", thawed, filepath.Join(c, "frozen"))
	}
	fileIs(t, filepath.Join(c, "frozen", "cgroup.freeze"), "0")
}

func TestThawNoGroup(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	group(t, filepath.Join(root, "freezer", "docker", otherID), frozenV1())
	// Deeper than searchDepth: not looked at.
	group(t, filepath.Join(root, "freezer", "a", "b", "c", "d", testID), frozenV1())
	thawed, err := thawer{cgroupRoot: root}.thaw(testID)
	if err == nil || !strings.Contains(err.Error(), "no group") {
		t.Errorf("thaw = %v, %v; want an error saying no group is named after the container", thawed, err)
	}
	fileIs(t, filepath.Join(root, "freezer", "docker", otherID, "freezer.state"), "FROZEN")
}

func TestPruneKeepsGroupsInUse(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	c := filepath.Join(root, "freezer", "libpod_parent", "libpod-"+testID)
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(c, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file stands for a group that still has tasks: rmdir fails on it.
	group(t, filepath.Join(c, "c"), map[string]string{"tasks": "42\n"})
	thawer{cgroupRoot: root}.prune(testID)
	if _, err := os.Stat(filepath.Join(c, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty group a: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(c, "c")); err != nil {
		t.Errorf("group in use: %v, want it kept", err)
	}
	if _, err := os.Stat(c); err != nil {
		t.Errorf("the container's group, parent of one in use: %v, want it kept", err)
	}
}

// standIn is a Docker API stand-in for one container whose SIGKILL the
// engine did not see land until its frozen group (state) is thawed.
type standIn struct {
	mu      sync.Mutex
	state   string // path of the fake freezer.state
	removes int
	// removeErr is the first removal's error message; forgets makes the
	// engine forget the container after it (Podman).
	removeErr string
	forgets   bool
	// waitForever makes the wait block until the request ends.
	waitForever bool
}

func (s *standIn) frozen() bool {
	b, _ := os.ReadFile(s.state)
	return strings.TrimSpace(string(b)) != "THAWED"
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.URL.Path
	fail := func(code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
	}
	gone := s.forgets && s.removes > 0
	switch {
	case strings.HasSuffix(p, "/_ping"):
		w.Header().Set("Api-Version", "1.45")
		_, _ = w.Write([]byte("OK"))
	case strings.HasSuffix(p, "/version"):
		_ = json.NewEncoder(w).Encode(map[string]any{"Version": "26.1.5", "ApiVersion": "1.45"})
	case gone:
		fail(http.StatusNotFound, "No such container: c1")
	case r.Method == http.MethodDelete && strings.HasSuffix(p, "/containers/c1"):
		s.removes++
		switch {
		case s.removes == 1:
			fail(http.StatusInternalServerError, s.removeErr)
		case s.forgets || s.removes > 2:
			fail(http.StatusNotFound, "No such container: c1")
		case s.frozen():
			fail(http.StatusInternalServerError, "cannot remove container: still frozen")
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	case strings.HasSuffix(p, "/containers/c1/json"):
		_ = json.NewEncoder(w).Encode(map[string]any{"Id": testID, "Name": "/c1", "State": map[string]any{"Status": "running", "Running": s.frozen()}})
	case strings.HasSuffix(p, "/containers/c1/wait"):
		s.mu.Unlock()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for s.waitForever || s.frozen() {
			select {
			case <-r.Context().Done():
				s.mu.Lock()
				return
			case <-tick.C:
			}
		}
		s.mu.Lock()
		_ = json.NewEncoder(w).Encode(map[string]any{"StatusCode": 137})
	default:
		fail(http.StatusNotImplemented, r.Method+" "+p)
	}
}

// serve runs s on a unix socket (a local engine) and returns a Runtime
// whose thawer looks at root.
func serve(t *testing.T, s *standIn, root string) *Runtime {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	r, err := New(Config{Host: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	r.thawer = thawer{cgroupRoot: root}
	return r
}

// frozenContainer makes the fake freezer tree of testID with one frozen
// group and returns its root and the frozen group's state file.
func frozenContainer(t *testing.T) (root, state string) {
	t.Helper()
	root = t.TempDir()
	c := filepath.Join(root, "freezer", "docker", testID)
	group(t, c, thawedV1())
	group(t, filepath.Join(c, "pod"), frozenV1())
	return root, filepath.Join(c, "pod", "freezer.state")
}

func TestKillNotSeenThawsWaitsAndRemoves(t *testing.T) {
	t.Parallel()
	root, state := frozenContainer(t)
	s := &standIn{state: state, removeErr: dockerKillNotSeen}
	r := serve(t, s, root)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := r.RemoveContainer(ctx, "c1"); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	fileIs(t, state, "THAWED")
	if s.removes != 2 {
		t.Errorf("%d removals, want 2 (the one that failed, and after the exit)", s.removes)
	}
}

func TestKillNotSeenIsBounded(t *testing.T) {
	t.Parallel()
	root, state := frozenContainer(t)
	s := &standIn{state: state, waitForever: true, removeErr: dockerKillNotSeen}
	r := serve(t, s, root)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.RemoveContainer(ctx, "c1")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("RemoveContainer took %s; want it bounded by its context (500ms)", took)
	}
	for _, want := range []string{"did not receive an exit event", "thawed frozen cgroups " + filepath.Dir(state), "not exited after"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("RemoveContainer = %v; want it to say %q", err, want)
		}
	}
}

func TestPodmanForgetsUnkillable(t *testing.T) {
	t.Parallel()
	root, state := frozenContainer(t)
	s := &standIn{state: state, forgets: true, removeErr: podmanKillNotSeen}
	r := serve(t, s, root)
	if err := r.RemoveContainer(t.Context(), "c1"); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	fileIs(t, state, "THAWED")
}

func TestPodmanForgetsUnkillableRemote(t *testing.T) {
	t.Parallel()
	root, state := frozenContainer(t)
	s := &standIn{state: state, forgets: true, removeErr: podmanKillNotSeen}
	r := serve(t, s, root)
	r.host = "tcp://192.0.2.1:2375" // not this host: its cgroups are not ours
	err := r.RemoveContainer(t.Context(), "c1")
	if err == nil || !strings.Contains(err.Error(), "given PIDs did not die") || !strings.Contains(err.Error(), "may live on") {
		t.Errorf("RemoveContainer = %v; want the engine's error and that the tasks may live on", err)
	}
	fileIs(t, state, "FROZEN")
}

func TestOtherRemoveErrorsNotRetried(t *testing.T) {
	t.Parallel()
	root, state := frozenContainer(t)
	s := &standIn{state: state, removeErr: "driver failed to remove root filesystem: device or resource busy"}
	r := serve(t, s, root)
	err := r.RemoveContainer(t.Context(), "c1")
	if err == nil || !strings.Contains(err.Error(), "device or resource busy") {
		t.Errorf("RemoveContainer = %v; want the engine's error", err)
	}
	if s.removes != 1 {
		t.Errorf("%d removals, want 1", s.removes)
	}
	fileIs(t, state, "FROZEN")
}

func TestAwaitEmpty(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	exiting := filepath.Join(root, "exiting")
	stuck := filepath.Join(root, "stuck")
	group(t, exiting, map[string]string{"cgroup.procs": "42\n"})
	group(t, stuck, map[string]string{"cgroup.procs": "43\n"})
	// The task of exiting leaves after a moment, as a thawed, killed task does.
	done := make(chan error, 1)
	time.AfterFunc(100*time.Millisecond, func() { done <- os.WriteFile(filepath.Join(exiting, "cgroup.procs"), nil, 0o644) })
	if err := awaitEmpty(t.Context(), []string{exiting, filepath.Join(root, "gone")}, 10*time.Second); err != nil {
		t.Errorf("awaitEmpty(exiting, gone) = %v, want nil once the task left", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	err := awaitEmpty(t.Context(), []string{exiting, stuck}, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), stuck) {
		t.Errorf("awaitEmpty(stuck) = %v, want an error naming %s", err, stuck)
	}
}
