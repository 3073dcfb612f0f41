package leak_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// frozenChild puts a sleep into a freezer group of its own and freezes it,
// as a test killed during the runtime's thaw test leaves its container
// (cgroup v1: SIGKILL waits for the thaw, and the engine's forced removal
// fails with "did not receive an exit event"), then idles.
const frozenChild = `set -e
if [ -d /sys/fs/cgroup/freezer ]; then d=/sys/fs/cgroup/freezer/leak-frozen f=freezer.state v=FROZEN
else d=/sys/fs/cgroup/leak-frozen f=cgroup.freeze v=1; fi
mkdir "$d"
sleep 3600 &
echo $! >"$d/cgroup.procs"
echo "$d/$f" >/state-file
while :; do echo $v >"$d/$f"; sleep 1; done
`

// TestIntegrationReapFrozenContainerOfAKilledTest: a container labelled by
// a test whose process is gone, with no run marker (an integration test
// tracks no cluster) and a frozen task inside, is found by Reap (make
// clean-e2e) and removed.
func TestIntegrationReapFrozenContainerOfAKilledTest(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	runID := runtime.NewRunID()
	gone := runtime.OwnerOf(999999999, 1) // a process of this host that is gone
	name := "capd-e2e-frozen-" + runID
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{
		Name: name, Image: ref, Privileged: true,
		Entrypoint: []string{"sh", "-c", frozenChild},
		Labels:     runtime.RunLabels(runID, "leak-test", map[string]string{runtime.LabelOwner: gone}),
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runtimetest.RemoveRun(context.Background(), rt, runID) })

	// Wait until the child group reads frozen.
	var state string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		var out bytes.Buffer
		_, _ = rt.Exec(ctx, name, runtime.ExecOptions{Cmd: []string{"sh", "-c", `cat "$(cat /state-file)"`}, Stdout: &out})
		if state = strings.TrimSpace(out.String()); state == "FROZEN" || state == "1" {
			break
		}
	}
	if state != "FROZEN" && state != "1" {
		t.Fatalf("the child group never froze (state %q)", state)
	}

	u, err := leak.UnmarkedRuns(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range u {
		if r.ID == runID {
			found = true
			if !r.Gone() {
				t.Errorf("run %s: owners %s, want gone", runID, r.State())
			}
		}
	}
	if !found {
		t.Fatalf("UnmarkedRuns does not list run %s: %+v", runID, u)
	}
	reaped, err := leak.Reap(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	for _, r := range reaped {
		if r.Run.ID == runID {
			ok = true
			if r.Err != nil || len(r.Report.Containers) != 1 {
				t.Errorf("Reap of run %s: %s, %v", runID, r.Report, r.Err)
			}
		}
	}
	if !ok {
		t.Fatalf("Reap did not reap run %s: %+v", runID, reaped)
	}
	if cs, err := rt.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: runID}}); err != nil || len(cs) != 0 {
		t.Errorf("after Reap: %+v, %v", cs, err)
	}
}
