// clean is `capd-e2e clean` (`make clean-e2e`): it removes what E2E runs
// left in the container engine (DOCKER_HOST), by the runs' markers
// (framework/leak): a run killed outright (kill -9, a node lost) leaves its
// kind management cluster, its workload clusters' machines and load
// balancers, and whatever it labelled with its run id; a test killed
// outright leaves the objects it labelled, without markers, which are its
// once their owner process is gone, and a killed host test of the runtime
// the cgroup it froze a task in (moby.ReapHostGroups).
//
//	capd-e2e clean              remove everything of the runs whose process is gone (kept runs aside: listed)
//	capd-e2e clean --list       list the runs in the engine, live, dead or kept
//	capd-e2e clean --run ID,... also remove these runs (run ids, or names of kept runs), whatever their process
//	capd-e2e clean --kept       also remove every kept run
//	capd-e2e clean --check ID   report what run ID left (exit 1 if anything), remove it
//
// Runs whose process is alive, and kept runs (make up, or a run with
// SKIP_RESOURCE_CLEANUP), are never touched unless named with --run or
// --check (or --kept for kept runs). The suite does the first before it
// creates anything, so a re-run after a crash needs no manual step.

package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

func newCleanCommand(streams streams) *cobra.Command {
	var o cleanOptions
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed E2E runs and tests left in the engine (never a live run's)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitCode(runClean(cmd.Context(), o, streams.out, streams.err))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.list, "list", false, "list the runs in the engine and exit")
	f.StringSliceVar(&o.runs, "run", nil, "run ids (or names of kept runs) to remove whatever their process")
	f.StringVar(&o.check, "check", "", "report what this run left, remove it, exit 1 if it left anything")
	f.BoolVar(&o.kept, "kept", false, "also remove every kept run (make up, SKIP_RESOURCE_CLEANUP)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	cmd.MarkFlagsMutuallyExclusive("list", "check", "run")
	cmd.MarkFlagsMutuallyExclusive("list", "check", "kept")
	return cmd
}

type cleanOptions struct {
	list    bool
	runs    []string
	check   string
	kept    bool
	timeout time.Duration
}

func runClean(ctx context.Context, o cleanOptions, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	rt, err := moby.New(moby.Config{})
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e clean:", err)
		return 2
	}
	defer rt.Close()

	switch {
	case o.list:
		return listRuns(ctx, rt, stdout, stderr)
	case o.check != "":
		return checkRun(ctx, rt, o.check, stdout, stderr)
	}
	var ids []string
	for _, id := range o.runs {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	runsBefore, err := leak.Runs(ctx, rt)
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e clean:", err)
		return 2
	}
	if o.kept {
		for _, r := range runsBefore {
			if r.Kept != "" {
				ids = append(ids, r.ID)
			}
		}
	}
	removed, code := reap(ctx, rt, streams{stdout, stderr}, ids...)
	if code == 2 {
		return code
	}
	if len(removed) == 0 && code == 0 {
		fmt.Fprintln(stdout, "capd-e2e clean: no run to clean up")
	}
	if c := reapHostGroups(ctx, stdout, stderr); c > code {
		code = c
	}
	for _, r := range runsBefore {
		if r.Kept != "" && !removed[r.ID] {
			fmt.Fprintf(stdout, "kept: %q (run %s, clusters %s): left; remove it with `make down NAME=%s` or `make clean-e2e ARGS=\"--run %s\"` (all kept: --kept)\n",
				r.Kept, r.ID, strings.Join(r.Clusters, ", "), r.Kept, r.Kept)
		}
	}
	return code
}

// reap removes the runs whose process is gone, and the runs ids names
// (run ids or names of kept runs) whatever their process, and says what it
// removed, once the engine's listing confirms it (leak.Reap). It returns
// the ids of the runs removed and an exit code: 1 if one was not removed
// whole, 2 if the engine could not be read.
func reap(ctx context.Context, rt runtime.Runtime, s streams, ids ...string) (map[string]bool, int) {
	reaped, err := leak.Reap(ctx, rt, ids...)
	if err != nil {
		fmt.Fprintln(s.err, "capd-e2e:", err)
		return nil, 2
	}
	removed := map[string]bool{}
	code := 0
	for _, r := range reaped {
		if r.Err != nil {
			// Found, not (all) removed: what is left is in the error.
			fmt.Fprintf(s.out, "run %s (owner %s, clusters %s): found %s\n", r.Run.ID, r.Run.Owner, strings.Join(r.Run.Clusters, ", "), r.Report)
			fmt.Fprintf(s.err, "capd-e2e: run %s not removed whole: %v\n", r.Run.ID, r.Err)
			code = 1
			continue
		}
		removed[r.Run.ID] = true
		fmt.Fprintf(s.out, "run %s (owner %s, clusters %s): removed %s\n", r.Run.ID, r.Run.Owner, strings.Join(r.Run.Clusters, ", "), r.Report)
	}
	return removed, code
}

// reapHostGroups removes the cgroups that killed host tests of the
// runtime left on this host (moby.ReapHostGroups), and says what it found;
// 1 if one of a gone owner could not be removed, 2 if they could not be
// listed.
func reapHostGroups(ctx context.Context, stdout, stderr io.Writer) int {
	groups, err := moby.ReapHostGroups(ctx)
	code := 0
	for _, g := range groups {
		fmt.Fprintf(stdout, "host cgroup %s: %s\n", g.Path, g.State())
		if g.Err != nil {
			code = 1
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e clean: the host's cgroups:", err)
		code = 2
	}
	return code
}

func listRuns(ctx context.Context, rt runtime.Runtime, stdout, stderr io.Writer) int {
	runs, err := leak.Runs(ctx, rt)
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e clean:", err)
		return 2
	}
	for _, r := range runs {
		state := "gone"
		if r.Alive() {
			state = "alive"
		}
		if r.Kept != "" {
			state += ", kept as " + r.Kept
		}
		fmt.Fprintf(stdout, "%s\towner %s (%s)\tstarted %s\tclusters %s\n", r.ID, r.Owner, state, r.Started.UTC().Format(time.RFC3339), strings.Join(r.Clusters, ","))
	}
	unmarked, err := leak.UnmarkedRuns(ctx, rt)
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e clean:", err)
		return 2
	}
	for _, u := range unmarked {
		fmt.Fprintf(stdout, "%s\tno markers, %d objects\towners %s\n", u.ID, u.Objects, u.State())
	}
	groups, err := moby.HostGroups()
	for _, g := range groups {
		fmt.Fprintf(stdout, "%s\thost cgroup of a test\t%s\n", g.Path, g.State())
	}
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e clean: the host's cgroups:", err)
		return 2
	}
	return 0
}

// checkRun is the supervisor's leak check (capd-e2e run): what the run
// left is reported, then removed with the run's markers (leak.ClearRun),
// so that the next job starts clean, and the exit code says it.
func checkRun(ctx context.Context, rt runtime.Runtime, id string, stdout, stderr io.Writer) int {
	left, err := leak.ClearRun(ctx, rt, id)
	if left.Empty() {
		if err != nil {
			fmt.Fprintln(stderr, "capd-e2e clean:", err)
			return 2
		}
		fmt.Fprintf(stdout, "run %s left nothing\n", id)
		return 0
	}
	fmt.Fprintln(stdout, left)
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e clean:", err)
	}
	return 1
}
