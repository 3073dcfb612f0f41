// up and down are `capd-e2e up` and `capd-e2e down` (`make up`, `make
// down`): a kept environment to explore (docs/explore.md).
//
//	capd-e2e up   [--name explore] [--flavor topology] [--control-plane-machine-count N] [--worker-machine-count N] [--ccm=false]
//	capd-e2e down [--name explore]
//
// up is a supervised run (capd-e2e run) of the spec labelled "explore",
// with SkipCleanup: the images, a kind management cluster with Cluster
// API, the kubeadm providers, CAPD and the docker cloud-controller-manager,
// and a workload cluster, kept under the name. The suite writes how to
// reach it (framework/kept: the kubeconfigs and env.json) into the
// environment's folder, _explore/NAME; up prints it. A failed up removes
// what it made. down removes exactly that environment (by its run's
// markers: framework/leak), and its kubeconfigs; its artifacts stay.

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/framework/kept"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// Environment variables the explore spec (e2e/explore_test.go) and the
// suite's keep step (framework/suite: EnvKeep, EnvEnvDir) read.
const (
	envKeep           = "CAPD_E2E_KEEP"
	envEnvDir         = "CAPD_E2E_ENV_DIR"
	envFlavor         = "EXPLORE_FLAVOR"
	envCPCount        = "EXPLORE_CONTROL_PLANE_MACHINE_COUNT"
	envWorkerCount    = "EXPLORE_WORKER_MACHINE_COUNT"
	envCloudProvider  = "DOCKER_CLOUD_PROVIDER"
	envWorkload       = "CAPD_E2E_WORKLOAD_CLUSTER"
	labelExplore      = "explore"
	defaultEnvName    = "explore"
	exploreFolderRoot = "_explore"
)

// envOptions name a kept environment and its folder.
type envOptions struct {
	name string
	dir  string
}

func (e *envOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&e.name, "name", env("NAME", defaultEnvName), "the environment's name ($NAME)")
	cmd.Flags().StringVar(&e.dir, "dir", "", "the environment's folder: kubeconfigs, env.json, artifacts (default _explore/NAME)")
}

func (e *envOptions) check() error {
	if err := kept.CheckName(e.name); err != nil {
		return err
	}
	if e.dir == "" {
		e.dir = filepath.Join(exploreFolderRoot, e.name)
	}
	abs, err := filepath.Abs(e.dir)
	e.dir = abs
	return err
}

// lock takes the environment's lock file beside its folder, so that two
// ups (or an up and a down) of one name do not run at once.
func (e *envOptions) lock() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(e.dir), 0o755); err != nil {
		return nil, err
	}
	p := e.dir + ".lock"
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the lock file, unlocked and unwritten
		return nil, fmt.Errorf("environment %q is busy: another capd-e2e up, down or iterate holds %s", e.name, p)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}

// keptRun returns the run kept under name, or nil.
func keptRun(ctx context.Context, rt runtime.Runtime, name string) (*leak.Run, []string, error) {
	runs, err := leak.Runs(ctx, rt)
	if err != nil {
		return nil, nil, err
	}
	var found *leak.Run
	var names []string
	for i, r := range runs {
		if r.Kept == "" {
			continue
		}
		names = append(names, r.Kept)
		if r.Kept == name {
			found = &runs[i]
		}
	}
	return found, names, nil
}

type upOptions struct {
	envOptions
	flavor  string
	cpCount int
	wkCount int
	ccm     bool
	run     runOptions
}

func newUpCommand(s streams) *cobra.Command {
	o := &upOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "A management and a workload cluster, kept running to explore (make up)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageError(err)
			}
			return exitCode(up(cmd.Context(), *o, s))
		},
	}
	o.envOptions.flags(cmd)
	f := cmd.Flags()
	flavor, ok := os.LookupEnv("FLAVOR")
	if !ok {
		flavor = "topology"
	}
	f.StringVar(&o.flavor, "flavor", flavor, `the workload cluster's template: "topology" (ClusterClass quick-start, a MachineDeployment and a MachinePool) or "" (the classic template) ($FLAVOR)`)
	f.IntVar(&o.cpCount, "control-plane-machine-count", o.run.envInt("CONTROL_PLANE_MACHINE_COUNT", 0), "control-plane machines (0: the spec's default, 1) ($CONTROL_PLANE_MACHINE_COUNT)")
	f.IntVar(&o.wkCount, "worker-machine-count", o.run.envInt("WORKER_MACHINE_COUNT", 0), "worker machines (0: the spec's default, 1) ($WORKER_MACHINE_COUNT)")
	f.BoolVar(&o.ccm, "ccm", o.run.envBool("CCM", true), "run the docker cloud-controller-manager for the workload cluster ($CCM)")
	suiteFlags(cmd, &o.run)
	return cmd
}

// suiteFlags are the flags of capd-e2e run that up and iterate take too.
func suiteFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.StringVar(&o.config, "config", env("E2E_CONFIG", "config/e2e.yaml"), "the E2E config ($E2E_CONFIG)")
	f.StringVar(&o.suite, "suite", env("E2E_SUITE_DIR", "e2e"), "the Ginkgo suite's package directory, capd-e2e's or a provider's ($E2E_SUITE_DIR)")
	f.DurationVar(&o.timeout, "timeout", o.envDuration("GINKGO_TIMEOUT", "3h"), "Ginkgo's suite timeout ($GINKGO_TIMEOUT)")
	f.DurationVar(&o.grace, "grace-period", o.envDuration("GRACE_PERIOD", "10m"), "how long the suite gets to clean up after SIGTERM/SIGINT before it is killed ($GRACE_PERIOD)")
	f.StringVar(&o.runID, "run-id", os.Getenv("CAPD_E2E_RUN_ID"), "the run id everything the run creates is labelled with ($CAPD_E2E_RUN_ID, else a new one)")
	f.StringVar(&o.ginkgo, "ginkgo", env("GINKGO", "ginkgo"), "Ginkgo's CLI, at the version the suite's go.mod requires ($GINKGO)")
	f.BoolVar(&o.images, "images", true, "provide the images the selected specs need first")
	o.nodes = 1
}

func (o *upOptions) check() error {
	errs := []error{o.envOptions.check()}
	if o.cpCount < 0 || o.wkCount < 0 {
		errs = append(errs, fmt.Errorf("--control-plane-machine-count %d, --worker-machine-count %d: want 0 (the default) or more", o.cpCount, o.wkCount))
	}
	o.run.artifacts = filepath.Join(o.dir, "artifacts")
	o.run.labelFilter = labelExplore
	o.run.skipCleanup = true
	errs = append(errs, o.run.check())
	return errors.Join(errs...)
}

// setenv sets the environment variables the suite reads.
func setenv(vars map[string]string) error {
	var errs []error
	for k, v := range vars {
		errs = append(errs, os.Setenv(k, v))
	}
	return errors.Join(errs...)
}

func up(ctx context.Context, o upOptions, s streams) int {
	say := func(format string, args ...any) { fmt.Fprintf(s.err, "capd-e2e up: "+format+"\n", args...) }
	unlock, err := o.lock()
	if err != nil {
		say("%v", err)
		return 1
	}
	defer unlock()
	rt, err := moby.New(moby.Config{})
	if err != nil {
		say("%v", err)
		return 2
	}
	defer rt.Close()
	run, _, err := keptRun(ctx, rt, o.name)
	if err != nil {
		say("%v", err)
		return 2
	}
	if run != nil {
		say("environment %q is already up (run %s, clusters %s; kubeconfigs in %s): use it, remove it with `make down NAME=%s`, or bring up another with NAME=<name>",
			o.name, run.ID, strings.Join(run.Clusters, ", "), o.dir, o.name)
		return 1
	}
	if o.run.runID == "" {
		o.run.runID = runtime.NewRunID()
	}
	vars := map[string]string{envKeep: o.name, envEnvDir: o.dir, envFlavor: o.flavor}
	if o.cpCount > 0 {
		vars[envCPCount] = strconv.Itoa(o.cpCount)
	}
	if o.wkCount > 0 {
		vars[envWorkerCount] = strconv.Itoa(o.wkCount)
	}
	if !o.ccm {
		vars[envCloudProvider] = ""
	}
	if err := setenv(vars); err != nil {
		say("%v", err)
		return 2
	}
	if err := os.RemoveAll(o.dir); err != nil {
		say("%v", err)
		return 2
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		say("%v", err)
		return 2
	}
	if rc := supervise(ctx, o.run, s); rc != 0 {
		say("bringing up %q failed (artifacts: %s, report: %s); removing what it made", o.name, o.run.artifacts, filepath.Join(o.run.artifacts, "report.html"))
		rm, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		_, _ = reap(rm, rt, s, o.name, o.run.runID) // it says what it could not remove
		// The suite describes what it kept even when interrupted: the
		// description of an environment now removed must go too.
		if err := kept.Remove(o.dir); err != nil {
			say("%v", err)
		}
		return rc
	}
	e, err := kept.Read(o.dir)
	if err != nil {
		say("the run passed but left no description of %q: %v", o.name, err)
		return 1
	}
	printEnv(s, o.envOptions, e)
	return 0
}

func printEnv(s streams, o envOptions, e kept.Env) {
	down := "make down"
	if o.name != defaultEnvName {
		down += " NAME=" + o.name
	}
	mgmt := filepath.Join(o.dir, kept.ManagementKubeconfig)
	fmt.Fprintf(s.out, `capd-e2e up: %q is up (run %s), described in %s.
  management cluster  kind cluster %s
                      export KUBECONFIG=%s
  workload clusters   %s
                      kubectl --kubeconfig %s get nodes -o wide
  clusterctl config   %s
Try:
  kubectl --kubeconfig %s get clusters,machinedeployments,machinepools,machines -A
  kubectl --kubeconfig %s get pods -A
  docker ps --filter label=io.x-k8s.kind.cluster
The guide: docs/explore.md. Remove it all: %s
`, e.Name, e.RunID, filepath.Join(o.dir, kept.File), e.ManagementCluster, mgmt, strings.Join(e.WorkloadClusters, " "),
		filepath.Join(o.dir, kept.WorkloadKubeconfig), e.ClusterctlConfig, mgmt, filepath.Join(o.dir, kept.WorkloadKubeconfig), down)
}

func newDownCommand(s streams) *cobra.Command {
	o := &envOptions{}
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove the environment capd-e2e up kept (make down)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageError(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return exitCode(down(ctx, *o, s))
		},
	}
	o.flags(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	return cmd
}

func down(ctx context.Context, o envOptions, s streams) int {
	unlock, err := o.lock()
	if err != nil {
		fmt.Fprintln(s.err, "capd-e2e down:", err)
		return 1
	}
	defer unlock()
	rt, err := moby.New(moby.Config{})
	if err != nil {
		fmt.Fprintln(s.err, "capd-e2e down:", err)
		return 2
	}
	defer rt.Close()
	run, names, err := keptRun(ctx, rt, o.name)
	if err != nil {
		fmt.Fprintln(s.err, "capd-e2e down:", err)
		return 2
	}
	if run == nil {
		msg := fmt.Sprintf("capd-e2e down: no environment %q is up; nothing removed.", o.name)
		if len(names) > 0 {
			msg += fmt.Sprintf(" Kept environments: %s (make down NAME=<name>).", strings.Join(names, ", "))
		}
		fmt.Fprintln(s.out, msg)
		if err := kept.Remove(o.dir); err != nil {
			fmt.Fprintln(s.err, "capd-e2e down:", err)
		}
		return 0
	}
	removed, code := reap(ctx, rt, s, run.ID)
	if code == 0 && !removed[run.ID] {
		fmt.Fprintf(s.err, "capd-e2e down: run %s of %q was not removed\n", run.ID, o.name)
		code = 1
	}
	if err := kept.Remove(o.dir); err != nil {
		fmt.Fprintln(s.err, "capd-e2e down:", err)
		code = 1
	}
	if code == 0 {
		fmt.Fprintf(s.out, "capd-e2e down: %q removed; its artifacts stay in %s\n", o.name, filepath.Join(o.dir, "artifacts"))
	}
	return code
}
