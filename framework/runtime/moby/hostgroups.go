package moby

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// The runtime's host tests (TestHostThaw) make cgroups of their own on
// this host and freeze a task in them. A test killed outright leaves its
// group frozen, with the task, and no engine lists it: its name carries
// its owner (the test process, as runtime.LabelOwner spells it), so that
// `capd-e2e clean` finds it and removes it once the owner is gone, and
// never while the owner runs or cannot be judged.

// HostGroupPrefix starts the name of every cgroup the runtime's tests
// make on this host.
const HostGroupPrefix = "capd-e2e-thaw-"

// HostGroupName names the cgroup a test of this process makes for id: the
// prefix, this process's owner ("/" spelt "+") and id.
func HostGroupName(id string) string {
	return HostGroupPrefix + strings.ReplaceAll(runtime.ProcessOwner(), "/", "+") + "+" + id
}

// HostGroup is a test's cgroup found on this host.
type HostGroup struct {
	// Path is the group's directory.
	Path string
	// Owner is the process that made it, or "" when its name carries
	// none (a group of an older test).
	Owner string
	// Gone: the owner is known to have exited; only then is the group
	// removed.
	Gone bool
	// Removed says the group is gone, its tasks killed; Err why not,
	// for a group Reap tried.
	Removed bool
	Err     error
}

// State says what became of the group, for a report.
func (g HostGroup) State() string {
	switch {
	case g.Removed:
		return "owner gone: removed"
	case g.Err != nil:
		return "owner gone: not removed: " + g.Err.Error()
	case g.Owner == "":
		return "owner unknown (no owner in its name): left"
	case g.Gone:
		return "owner gone"
	}
	if alive, known := runtime.OwnerState(g.Owner); known && alive {
		return "owner " + g.Owner + " runs: left"
	}
	return "owner " + g.Owner + " cannot be judged from here: left"
}

// HostGroups lists the tests' cgroups at the top of this host's freezer
// (cgroup v1) and cgroup2 hierarchies.
func HostGroups() ([]HostGroup, error) {
	roots, err := freezingHierarchies("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	var out []HostGroup
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		if err != nil {
			return out, fmt.Errorf("list %s: %w", root, err)
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), HostGroupPrefix) {
				continue
			}
			g := HostGroup{Path: filepath.Join(root, e.Name())}
			rest := strings.TrimPrefix(e.Name(), HostGroupPrefix)
			if i := strings.LastIndexByte(rest, '+'); i > 0 {
				g.Owner = strings.ReplaceAll(rest[:i], "+", "/")
				alive, known := runtime.OwnerState(g.Owner)
				g.Gone = known && !alive
			}
			out = append(out, g)
		}
	}
	return out, nil
}

// freezingHierarchies returns where mounts (a /proc/<pid>/mounts) has
// cgroup v1's freezer and the cgroup2 hierarchy mounted.
func freezingHierarchies(mounts string) ([]string, error) {
	f, err := os.Open(mounts)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var roots []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 4 {
			continue
		}
		switch {
		case fields[2] == "cgroup2",
			fields[2] == "cgroup" && strings.Contains(","+fields[3]+",", ",freezer,"):
			roots = append(roots, fields[1])
		}
	}
	return roots, s.Err()
}

// ReapHostGroups removes the tests' cgroups on this host whose owner is
// known to be gone: each is thawed, its tasks are killed (they are the
// dead test's), their exit awaited and the group removed. It returns
// every group it found, with what became of it.
func ReapHostGroups(ctx context.Context) ([]HostGroup, error) {
	groups, err := HostGroups()
	for i, g := range groups {
		if !g.Gone {
			continue
		}
		g.Err = removeHostGroup(ctx, g.Path)
		g.Removed = g.Err == nil
		groups[i] = g
	}
	return groups, err
}

func removeHostGroup(ctx context.Context, dir string) error {
	// A group stays frozen while a parent is: the test's groups are at
	// the top, so thawing the group and its children is enough.
	_, err := thawTree(dir)
	errs := []error{err}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("kill task %d of %s: %w", pid, dir, err))
			}
		}
	}
	if err := awaitEmpty(ctx, []string{dir}, taskExitWait); err != nil {
		errs = append(errs, err)
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
	}
	return errors.Join(errs...)
}
