package moby

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// A container the engine cannot kill.
//
// On cgroup v1 a task in a frozen freezer group acts on no signal, SIGKILL
// included, until the group is thawed. A kind node runs containerd and runc
// inside it, and a pod's group in it can be frozen when the node is killed
// (seen once in a MachineHealthCheck spec: a "runc init" in state D under a
// group whose freezer.state said FROZEN). The node's init then dies, but its
// PID namespace waits for the frozen task forever, so the engine never sees
// the exit. Docker gives up after a few seconds with "tried to kill
// container, but did not receive an exit event", and the container stays up.
//
// Podman instead says "given PIDs did not die within timeout" and forgets
// the container, while its tasks live on.
//
// cgroup v2's freezer lets SIGKILL end a frozen task, so there this does
// not happen and a thaw only tidies up. TestHostThaw checks both on the
// host's own kernel (v2 where cgroup2 is mounted, e.g. the unified
// hierarchy of a v1 hybrid host).
//
// The engine has no API to thaw, so when the engine is local the harness
// writes THAWED (cgroup v2: 0 to cgroup.freeze) to every frozen group at or
// under the container's own groups, found by their names (containerGroups).
// The SIGKILLs already sent then land, the container exits, and the call
// that failed is made again.

// killNotSeen are how Docker's kill, stop and forced removal, and Podman's,
// say that the container did not exit after SIGKILL.
var killNotSeen = []string{"did not receive an exit event", "given PIDs did not die within timeout"}

// unkillableWait bounds the wait for such a container's exit, within the
// caller's context.
const unkillableWait = 2 * time.Minute

func isKillNotSeen(err error) bool {
	return err != nil && slices.ContainsFunc(killNotSeen, func(s string) bool { return strings.Contains(err.Error(), s) })
}

// thawer finds and thaws frozen cgroups. Its root is a field so that tests
// can point it at a fake tree.
type thawer struct {
	cgroupRoot string // /sys/fs/cgroup
}

var hostThawer = thawer{cgroupRoot: "/sys/fs/cgroup"}

// searchDepth bounds how deep under a hierarchy's root the container's
// group is looked for: docker/<id>, system.slice/docker-<id>.scope and
// machine.slice/libpod-<id>.scope are at depth 2, a group under a
// --cgroup-parent a little deeper.
const searchDepth = 4

// containerGroups returns the groups named after the container id (its full
// ID) in the hierarchies that can freeze: cgroup v1's freezer, or the
// unified hierarchy where it is mounted at the root (cgroup v2). They are
// found by name rather than through /proc/<pid>/cgroup of the container's
// init, because an init that is exiting has already left its v1 groups.
// Nothing is found when the engine's cgroups are not this host's.
func (t thawer) containerGroups(id string) ([]string, error) {
	var roots []string
	if _, err := os.Stat(filepath.Join(t.cgroupRoot, "cgroup.controllers")); err == nil {
		roots = append(roots, t.cgroupRoot)
	} else if fi, err := os.Stat(filepath.Join(t.cgroupRoot, "freezer")); err == nil && fi.IsDir() {
		roots = append(roots, filepath.Join(t.cgroupRoot, "freezer"))
	}
	var groups []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil // a group that went away, or a file
			}
			if strings.Contains(d.Name(), id) {
				groups = append(groups, dir)
				return fs.SkipDir
			}
			rel, _ := filepath.Rel(root, dir)
			if rel != "." && strings.Count(rel, string(filepath.Separator))+1 >= searchDepth {
				return fs.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// thaw thaws every frozen group at or under the container's groups and
// returns those it thawed. Parents come before their children,
// as a group stays frozen while its parent is. Groups that vanish meanwhile
// (their tasks exited) are no error.
func (t thawer) thaw(id string) ([]string, error) {
	roots, err := t.containerGroups(id)
	if err != nil {
		return nil, fmt.Errorf("find the cgroups of container %s: %w", id, err)
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("find the cgroups of container %s: no group under %s is named after it (is the engine's host another?)", id, t.cgroupRoot)
	}
	var thawed []string
	var errs []error
	for _, root := range roots {
		did, err := thawTree(root)
		thawed = append(thawed, did...)
		errs = append(errs, err)
	}
	return thawed, errors.Join(errs...)
}

// thawTree thaws every frozen group at or under root, parents first, and
// returns those it thawed. Groups that vanish meanwhile (their tasks
// exited) are no error.
func thawTree(root string) ([]string, error) {
	var thawed []string
	var errs []error
	// The callback returns no error, so WalkDir returns none; thaw
	// errors are collected in errs.
	_ = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			// A group that went away, or a file: nothing to thaw.
			return nil
		}
		did, err := thawGroup(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if did {
			thawed = append(thawed, dir)
		}
		return nil
	})
	return thawed, errors.Join(errs...)
}

// thawGroup thaws dir if it is frozen (v1 freezer.state FROZEN or
// FREEZING, v2 cgroup.freeze 1).
func thawGroup(dir string) (bool, error) {
	for _, f := range []struct {
		file   string
		frozen []string
		thawed string
	}{
		{"freezer.state", []string{"FROZEN", "FREEZING"}, "THAWED"},
		{"cgroup.freeze", []string{"1"}, "0"},
	} {
		p := filepath.Join(dir, f.file)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		if !slices.Contains(f.frozen, strings.TrimSpace(string(b))) {
			return false, nil
		}
		if err := os.WriteFile(p, []byte(f.thawed), 0); err != nil {
			return false, fmt.Errorf("thaw %s: %w", dir, err)
		}
		return true, nil
	}
	return false, nil
}

// prune removes the container's groups that are empty, deepest first, for
// an engine that no longer knows the container but left them behind (Podman
// after a failed removal). A group that still holds tasks stays (rmdir
// fails), and so does everything above it.
func (t thawer) prune(id string) {
	roots, _ := t.containerGroups(id)
	for _, root := range roots {
		var dirs []string
		// The callback returns no error, so WalkDir returns none.
		_ = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, dir)
			}
			return nil
		})
		for _, dir := range slices.Backward(dirs) {
			_ = unix.Rmdir(dir) // a group still holding tasks stays, as the doc says
		}
	}
}

// taskExitWait bounds how long awaitEmpty waits for thawed tasks to exit.
const taskExitWait = 30 * time.Second

// awaitEmpty waits until no group in groups lists a task (cgroup.procs is
// empty or gone), within ctx and limit. It reads files of this host's
// cgroup filesystem, which has no change notification that works on every
// hierarchy, so it looks every 20 ms.
func awaitEmpty(ctx context.Context, groups []string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		busy := ""
		for _, g := range groups {
			b, err := os.ReadFile(filepath.Join(g, "cgroup.procs"))
			if err == nil && len(strings.TrimSpace(string(b))) > 0 {
				busy = g
				break
			}
		}
		if busy == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tasks still in %s after the thaw: %w", busy, ctx.Err())
		case <-tick.C:
		}
	}
}

// local reports whether the engine runs on this host: a unix socket (a
// remote engine over ssh or tcp has cgroups this process cannot see).
func (r *Runtime) local() bool {
	return strings.HasPrefix(r.host, "unix://")
}

// containerIDPattern matches a full container ID, which Podman's error
// names.
var containerIDPattern = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// awaitUnkillable is called when the engine sent SIGKILL to the container
// but saw no exit (cause). When the engine is local, it thaws the
// container's frozen groups; then it waits for the exit within ctx and
// unkillableWait. It returns nil once the container is not running, or
// gone with its frozen groups thawed; otherwise an error that names cause,
// the groups thawed and what ended the wait.
//
// Podman, unlike Docker, forgets the container even though its tasks did
// not die; the ID is then taken from Podman's error.
func (r *Runtime) awaitUnkillable(ctx context.Context, nameOrID string, cause error) error {
	var notes []string
	fail := func() error { return fmt.Errorf("%w; %s", cause, strings.Join(notes, "; ")) }
	d, err := r.InspectContainer(ctx, nameOrID)
	id := d.ID
	gone := errors.Is(err, runtime.ErrNotFound)
	if gone {
		id = containerIDPattern.FindString(cause.Error())
	} else if err != nil {
		notes = append(notes, err.Error())
	}
	var thawed []string
	if r.local() && id != "" {
		groups, err := r.thawer.thaw(id)
		if len(groups) > 0 {
			thawed = groups
			notes = append(notes, "thawed frozen cgroups "+strings.Join(groups, ", "))
		}
		if err != nil {
			notes = append(notes, err.Error())
		}
	}
	if gone {
		if len(thawed) == 0 {
			notes = append(notes, "the engine forgot the container; its tasks may live on")
			return fail()
		}
		// No engine waits for these tasks: give the SIGKILLs that were
		// pending a moment to land before the empty groups are removed.
		if err := awaitEmpty(ctx, thawed, taskExitWait); err != nil {
			notes = append(notes, err.Error())
			return fail()
		}
		r.thawer.prune(id)
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, unkillableWait)
	defer cancel()
	start := time.Now()
	if _, err := r.Wait(wctx, nameOrID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		if wctx.Err() != nil {
			err = fmt.Errorf("not exited after %s: %w", time.Since(start).Round(time.Millisecond), wctx.Err())
		}
		notes = append(notes, err.Error())
		return fail()
	}
	return nil
}
