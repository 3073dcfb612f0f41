package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

const (
	// DefaultCommandTimeout bounds each command, copy and engine call made on
	// a container when Collector.CommandTimeout is zero. A full journal of a
	// busy node is a few tens of megabytes and takes seconds; a minute leaves
	// room for a loaded CI machine without letting one stuck exec hold a run.
	DefaultCommandTimeout = time.Minute

	// DefaultTimeout bounds one whole collection (one call of any Collect
	// method) when Collector.Timeout is zero.
	DefaultTimeout = 5 * time.Minute

	// DefaultParallelism is how many containers are collected at the same
	// time when Collector.Parallelism is zero. A running machine takes three
	// engine calls at once (inspect, its own log, one exec); the fallback
	// without a shell takes one per step, so this caps the engine calls in
	// flight at about DefaultParallelism × 15.
	DefaultParallelism = 8

	// ErrorsFile is the name of the file, in each container's folder, that
	// lists what failed, as a JSON array of Failure. It is written only when
	// something failed.
	ErrorsFile = "errors.json"

	// StderrFile is the name of the file, in each container's folder, that
	// holds the standard error of commands that succeeded anyway, each under
	// a header naming the command. It is written only when there is some.
	StderrFile = "stderr.log"
)

// abandonGrace is how long a step may overrun its deadline before the
// collector stops waiting for it. Runtimes honour ctx, so this only matters
// for a broken one; it keeps the "never hangs" promise anyway. A variable so
// that tests can shorten it.
var abandonGrace = 5 * time.Second

// Command is an extra command run in every machine, whose standard output is
// saved to a file; it is the counterpart of upstream's
// framework.AdditionalLogs.
type Command struct {
	// File is the output file, relative to the machine's folder, e.g.
	// "ip-addr.txt". Required; it must be a local path (no "..", not
	// absolute).
	File string
	// Cmd is the command and its arguments, e.g. {"ip", "addr"}. Required.
	Cmd []string
	// Timeout bounds the command. If zero, Collector.CommandTimeout.
	Timeout time.Duration
}

// Copy is an extra path copied out of every machine as one tar stream.
type Copy struct {
	// Path is the file or directory in the container, e.g. "/etc/kubernetes".
	// Required.
	Path string
	// Dest is the file or folder, relative to the machine's folder, that
	// receives Path, e.g. "kubernetes". Required; it must be a local path.
	Dest string
	// Optional makes a missing Path silent instead of a failure.
	Optional bool
	// Timeout bounds the copy. If zero, Collector.CommandTimeout.
	Timeout time.Duration
}

// Target is one container to collect and the folder its logs go to.
type Target struct {
	// Container is the container's name or ID.
	Container string
	// Dir is the output folder; it is created if missing.
	Dir string
}

// Engine is what a Collector needs of the container engine: reading
// containers, never changing them.
type Engine interface {
	ListContainers(ctx context.Context, f runtime.Filter) ([]runtime.Container, error)
	InspectContainer(ctx context.Context, nameOrID string) (runtime.ContainerDetails, error)
	Exec(ctx context.Context, nameOrID string, opts runtime.ExecOptions) (runtime.ExecResult, error)
	CopyFrom(ctx context.Context, nameOrID, path string) (io.ReadCloser, error)
	Logs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error
}

var _ Engine = runtime.Containers(nil)

// Collector collects logs from CAPD containers through a container runtime.
// Its zero value is not usable: set Runtime. It is safe for concurrent use
// as long as its fields are not changed meanwhile.
type Collector struct {
	// Runtime is the engine the containers run in. Required.
	Runtime Engine

	// CommandTimeout bounds each command, copy, inspect and log read on a
	// container. If zero, DefaultCommandTimeout. Inside a machine it is
	// enforced with timeout(1); a machine without it bounds its commands only
	// by the collection script's deadline: the slowest command or all copies
	// in a row, whichever is longer, plus CommandTimeout.
	CommandTimeout time.Duration

	// Timeout bounds one call of a Collect method as a whole, on top of
	// the caller's context. If zero, DefaultTimeout.
	Timeout time.Duration

	// Parallelism is how many containers are collected at once. If zero,
	// DefaultParallelism.
	Parallelism int

	// AdditionalLogs are commands run in every machine container (not the
	// load balancer) after the default ones, like upstream's
	// DockerLogCollector.AdditionalLogs. If nil, none.
	AdditionalLogs []Command

	// AdditionalCopies are paths copied out of every machine container. If
	// nil, none.
	AdditionalCopies []Copy
}

func (c *Collector) commandTimeout() time.Duration {
	if c.CommandTimeout > 0 {
		return c.CommandTimeout
	}
	return DefaultCommandTimeout
}

func (c *Collector) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Collector) parallelism() int {
	if c.Parallelism > 0 {
		return c.Parallelism
	}
	return DefaultParallelism
}

// ContainerName returns the name CAPD gives the container of machine in
// cluster: the machine name, with "<cluster>-" prepended unless the machine
// name already starts with the cluster name (CAPD's rule, which keeps
// host names short enough for sethostname).
func ContainerName(cluster, machine string) string {
	if strings.HasPrefix(machine, cluster) {
		return machine
	}
	return cluster + "-" + machine
}

// LoadBalancerName returns the name of the CAPD load-balancer container of
// cluster: "<cluster>-lb".
func LoadBalancerName(cluster string) string {
	return cluster + "-lb"
}

// CollectMachine collects the logs of one machine container into dir. It
// returns an error naming what failed (also written to dir/errors.json); the
// files that could be collected are there either way.
func (c *Collector) CollectMachine(ctx context.Context, container, dir string) error {
	if err := c.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	return c.collect(ctx, container, dir, c.machineSteps())
}

// CollectMachines collects the logs of many machine containers, at most
// Parallelism at a time, each into its own folder. It always tries every
// target and returns the errors of all that failed, joined.
func (c *Collector) CollectMachines(ctx context.Context, targets []Target) error {
	if err := c.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	return c.collectAll(ctx, targets, c.machineSteps())
}

// CollectLoadBalancer collects the configuration and logs of a CAPD
// load-balancer container into dir.
func (c *Collector) CollectLoadBalancer(ctx context.Context, container, dir string) error {
	if err := c.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	return c.collect(ctx, container, dir, c.loadBalancerSteps())
}

// CollectCluster finds every container CAPD made for cluster (by its
// io.x-k8s.kind.cluster label) and collects them all at once: machines into
// dir/machines/<container>, the load balancer into
// dir/infrastructure/<container>. Folders are named after containers, not
// Machine objects, as this needs no management cluster. It returns an error
// if no container carries the label.
func (c *Collector) CollectCluster(ctx context.Context, cluster, dir string) error {
	return c.CollectClusterExcept(ctx, cluster, dir, nil)
}

// CollectClusterExcept is CollectCluster for the containers whose names are
// not in seen; it adds the names it collects (whether or not all of their
// logs could be read) to seen, if seen is not nil. Called again before the
// cluster is deleted, it collects the containers CAPD created since the
// first call (a machine still being provisioned when a spec failed or was
// interrupted), which would otherwise go with the cluster unread. It returns
// an error if no container carries the label and seen is empty; finding only
// containers already in seen is not an error.
func (c *Collector) CollectClusterExcept(ctx context.Context, cluster, dir string, seen map[string]bool) error {
	if err := c.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()

	listCtx, cancelList := context.WithTimeout(ctx, c.commandTimeout())
	defer cancelList()
	list, err := c.Runtime.ListContainers(listCtx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: cluster}})
	if err != nil {
		return fmt.Errorf("list containers of cluster %q: %w", cluster, err)
	}
	if len(list) == 0 && len(seen) == 0 {
		return fmt.Errorf("collect logs of cluster %q: no container has label %s=%s", cluster, runtime.LabelCluster, cluster)
	}
	machines, lbs := c.machineSteps(), c.loadBalancerSteps()
	jobs := make([]job, 0, len(list))
	for _, ct := range list {
		if seen[ct.Name] {
			continue
		}
		if seen != nil {
			seen[ct.Name] = true
		}
		if ct.Labels[runtime.LabelRole] == runtime.RoleExternalLoadBalancer || ct.Name == LoadBalancerName(cluster) {
			jobs = append(jobs, job{Target{ct.Name, filepath.Join(dir, "infrastructure", ct.Name)}, lbs})
			continue
		}
		jobs = append(jobs, job{Target{ct.Name, filepath.Join(dir, "machines", ct.Name)}, machines})
	}
	return c.run(ctx, jobs)
}

func (c *Collector) check() error {
	if c == nil || c.Runtime == nil {
		return errors.New("logs: Collector.Runtime is not set")
	}
	for _, a := range c.AdditionalLogs {
		if len(a.Cmd) == 0 || !filepath.IsLocal(a.File) {
			return fmt.Errorf("logs: additional command %q to %q: need a command and a local file name", a.Cmd, a.File)
		}
	}
	for _, a := range c.AdditionalCopies {
		if a.Path == "" || !filepath.IsLocal(a.Dest) {
			return fmt.Errorf("logs: additional copy %q to %q: need a path and a local destination", a.Path, a.Dest)
		}
	}
	return nil
}

type job struct {
	target Target
	steps  []step
}

func (c *Collector) collectAll(ctx context.Context, targets []Target, steps []step) error {
	jobs := make([]job, len(targets))
	for i, t := range targets {
		jobs[i] = job{t, steps}
	}
	return c.run(ctx, jobs)
}

// run collects every job, Parallelism at a time, best effort, and joins the
// errors in the order of jobs so that the message is stable.
func (c *Collector) run(ctx context.Context, jobs []job) error {
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, c.parallelism())
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				errs[i] = notStarted(j.target, context.Cause(ctx))
				return
			}
			errs[i] = c.collect(ctx, j.target.Container, j.target.Dir, j.steps)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
