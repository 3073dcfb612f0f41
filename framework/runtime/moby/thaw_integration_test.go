package moby_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// freezeScript moves a sleep into a freezer group of the container's own
// and freezes it (cgroup v1: freezer.state; v2: cgroup.freeze), as a kind
// node's runc can leave a pod's group, then idles as the test image does.
const freezeScript = `set -e
if [ -d /sys/fs/cgroup/freezer ]; then
	d=/sys/fs/cgroup/freezer/capd-frozen f=freezer.state v=FROZEN
else
	d=/sys/fs/cgroup/capd-frozen f=cgroup.freeze v=1
fi
mkdir "$d"
sleep 3600 &
echo $! >"$d/cgroup.procs"
echo $v >"$d/$f"
# v1 freezes asynchronously: the state reads FREEZING until every task
# has stopped. Wait for FROZEN (at most 20 s), then report what it is.
i=0
while [ "$(cat "$d/$f")" != "$v" ] && [ $i -lt 200 ]; do
	echo $v >"$d/$f"
	sleep 0.1
	i=$((i+1))
done
echo "frozen: $(cat "$d/$f") in $d"
trap 'exit 0' TERM INT
while :; do sleep 1 & wait $!; done
`

// TestIntegrationRemoveFrozenContainer: a container with a frozen task in
// it is removed. On cgroup v1 the engine cannot kill it (SIGKILL waits for
// the thaw) and says it "did not receive an exit event"; RemoveContainer
// thaws it and removes it again.
func TestIntegrationRemoveFrozenContainer(t *testing.T) {
	r := newRuntime(t)
	ctx := ctxFor(t, 4*time.Minute)
	name := startTestContainer(t, r, runtime.NewRunID(), func(s *runtime.ContainerSpec) {
		s.Privileged = true
		s.Entrypoint = []string{"sh", "-c", freezeScript}
	})
	d, err := r.InspectContainer(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	// If RemoveContainer fails, thaw by hand so that no task stays frozen
	// and startTestContainer's cleanup (registered before: runs after) can
	// remove the container.
	t.Cleanup(func() {
		if thawed, _ := moby.ThawGroups(d.ID); len(thawed) > 0 {
			t.Logf("cleanup: thawed %v", thawed)
		}
	})

	var stdout, stderr bytes.Buffer
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "frozen:"); {
		if time.Now().After(deadline) {
			d, _ := r.InspectContainer(ctx, name)
			t.Fatalf("the container did not freeze its task: status %s, stdout %q, stderr %q", d.State.Status, stdout.String(), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		stdout.Reset()
		stderr.Reset()
		if err := r.Logs(ctx, name, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("container: %s", strings.TrimSpace(stdout.String()))
	if !strings.Contains(stdout.String(), "frozen: FROZEN") && !strings.Contains(stdout.String(), "frozen: 1") {
		t.Fatalf("the task is not frozen: %q", stdout.String())
	}

	start := time.Now()
	err = r.RemoveContainer(ctx, name)
	t.Logf("RemoveContainer took %s", time.Since(start))
	if err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if _, err := r.InspectContainer(ctx, name); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("after RemoveContainer: inspect says %v, want not found", err)
	}
	// Nothing is left behind: no group, so no frozen task in one.
	if groups, err := moby.CgroupsOf(d.ID); len(groups) > 0 || err != nil {
		t.Errorf("after RemoveContainer: cgroups %v left (%v)", groups, err)
	}
}
