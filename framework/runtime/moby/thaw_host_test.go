package moby

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// TestHostThaw runs the thawer on this host's own cgroup hierarchies, not
// a fake tree: a sleep in a group named after a made-up container ID is
// frozen and sent SIGKILL, then thaw, awaitEmpty and prune must let it die
// and leave no group. The v1 case is the freezer hierarchy; the v2 case is
// wherever cgroup2 is mounted (the root on a v2 host, /sys/fs/cgroup/unified
// on a v1 hybrid one), so the v2 path is checked on a v1 host too.
func TestHostThaw(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	v2root := cgroup2Mount(t)
	for _, c := range []struct {
		name, root, parent, file, frozen, thawed string
		// killsFrozen: SIGKILL ends a frozen task without a thaw (v2's
		// freezer; v1's holds the signal until the thaw).
		killsFrozen bool
	}{
		{"v1 freezer", "/sys/fs/cgroup", "/sys/fs/cgroup/freezer", "freezer.state", "FROZEN", "THAWED", false},
		{"v2 unified", v2root, v2root, "cgroup.freeze", "1", "0", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.parent == "" {
				t.Skip("no cgroup2 hierarchy is mounted on this host")
			}
			if _, err := os.Stat(c.parent); err != nil {
				t.Skipf("this host has no %s: %v", c.name, err)
			}
			id := runtime.NewRunID()
			g := filepath.Join(c.parent, HostGroupName(id))
			sleep, waited := frozenSleep(t, g, c.file, c.frozen, c.thawed)

			if err := sleep.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if c.killsFrozen {
				select {
				case <-waited.done:
				case <-time.After(30 * time.Second):
					t.Fatal("the frozen sleep did not die of SIGKILL in 30s")
				}
			}
			th := thawer{cgroupRoot: c.root}
			thawed, err := th.thaw(id)
			if err != nil {
				t.Fatalf("thaw: %v", err)
			}
			// The group reads frozen even when its task is gone (v2), so
			// it is thawed either way.
			if len(thawed) != 1 || thawed[0] != g {
				t.Errorf("thawed %q, want [%s]", thawed, g)
			}
			fileIs(t, filepath.Join(g, c.file), c.thawed)

			select {
			case <-waited.done:
				err := waited.err
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Errorf("sleep ended with %v, want killed by SIGKILL", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the thawed sleep did not die of its SIGKILL in 30s")
			}
			if err := awaitEmpty(t.Context(), []string{g}, taskExitWait); err != nil {
				t.Fatal(err)
			}
			th.prune(id)
			if _, err := os.Stat(g); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after prune: %s is still there (%v)", g, err)
			}
			if groups, err := th.containerGroups(id); len(groups) != 0 || err != nil {
				t.Errorf("after prune: groups %q (%v), want none", groups, err)
			}
		})
	}
}

// cgroup2Mount returns where a cgroup2 hierarchy is mounted on this host,
// or "" if none is.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 2 && fields[2] == "cgroup2" {
			return fields[1]
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return ""
}

// waited is the outcome of a process's Wait: err is set once done is closed.
type waited struct {
	done chan struct{}
	err  error
}

// frozenSleep makes group g, starts a sleep in it and freezes the group
// (writes frozen to file), waiting until the kernel says it is frozen. It
// returns the sleep and its Wait's outcome. Its cleanup thaws, kills and
// removes whatever a failed test left.
func frozenSleep(t *testing.T, g, file, frozen, thawed string) (*os.Process, *waited) {
	t.Helper()
	if err := os.Mkdir(g, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "3600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	// The cleanup thaws by hand (writes thawed), not with the code under
	// test, so that a broken thaw fails the test instead of hanging it.
	w := &waited{done: make(chan struct{})}
	go func() { w.err = sleep.Wait(); close(w.done) }()
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(g, file), []byte(thawed), 0)
		_ = sleep.Process.Kill()
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			t.Errorf("cleanup: sleep %d in %s did not die", sleep.Process.Pid, g)
		}
		_ = unix.Rmdir(g)
	})
	if err := os.WriteFile(filepath.Join(g, "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0); err != nil {
		t.Fatalf("move the sleep into %s: %v", g, err)
	}
	if err := os.WriteFile(filepath.Join(g, file), []byte(frozen), 0); err != nil {
		t.Fatalf("freeze %s: %v", g, err)
	}
	// v1 goes through FREEZING; v2 says "frozen 1" in cgroup.events.
	state, want := file, frozen
	if file == "cgroup.freeze" {
		state, want = "cgroup.events", "frozen 1"
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(filepath.Join(g, state))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), want) {
			return sleep.Process, w
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not freeze in 10s: %s reads %q", g, state, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
