package moby

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// TestReapHostGroups: the groups a killed host test leaves on this host
// are found by name, and only a group whose owner is known to be gone is
// removed, with its frozen task; a live owner's group and a group whose
// name carries no owner are left as they are.
func TestReapHostGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	parent, file, frozen, thawed := "/sys/fs/cgroup/freezer", "freezer.state", "FROZEN", "THAWED"
	if _, err := os.Stat(parent); err != nil {
		parent, file, frozen, thawed = cgroup2Mount(t), "cgroup.freeze", "1", "0"
	}
	dead := filepath.Join(parent, HostGroupPrefix+strings.ReplaceAll(runtime.OwnerOf(999999999, 1), "/", "+")+"+"+runtime.NewRunID())
	live := filepath.Join(parent, HostGroupName(runtime.NewRunID()))
	old := filepath.Join(parent, HostGroupPrefix+runtime.NewRunID())
	_, deadWaited := frozenSleep(t, dead, file, frozen, thawed)
	_, liveWaited := frozenSleep(t, live, file, frozen, thawed)
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(old) })

	groups, err := ReapHostGroups(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]HostGroup{}
	for _, g := range groups {
		found[g.Path] = g
	}
	if g := found[dead]; !g.Removed || g.Err != nil {
		t.Errorf("the dead owner's group: %+v (%s), want removed", g, g.State())
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dead, err)
	}
	select {
	case <-deadWaited.done:
		var ee *exec.ExitError
		if !errors.As(deadWaited.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the dead owner's task ended with %v, want killed by SIGKILL", deadWaited.err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the dead owner's frozen task was not killed")
	}
	for _, p := range []string{live, old} {
		g, ok := found[p]
		if !ok || g.Removed || g.Gone {
			t.Errorf("group %s: %+v (found %v), want found and left", p, g, ok)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if g := found[old]; g.Owner != "" || !strings.Contains(g.State(), "owner unknown") {
		t.Errorf("the old group's state: %q", g.State())
	}
	select {
	case <-liveWaited.done:
		t.Error("the live owner's task was killed")
	default:
	}
}
