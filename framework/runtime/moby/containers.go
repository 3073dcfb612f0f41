package moby

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

func filters(f runtime.Filter) client.Filters {
	out := make(client.Filters)
	if f.Name != "" {
		out.Add("name", f.Name)
	}
	for k, v := range f.Labels {
		if v == "" {
			out.Add("label", k)
		} else {
			out.Add("label", k+"="+v)
		}
	}
	return out
}

// ListContainers implements runtime.Containers.
func (r *Runtime) ListContainers(ctx context.Context, f runtime.Filter) ([]runtime.Container, error) {
	res, err := r.c.ContainerList(ctx, client.ContainerListOptions{All: !f.Running, Filters: filters(f)})
	if err != nil {
		return nil, r.wrap(err, "list containers")
	}
	out := make([]runtime.Container, 0, len(res.Items))
	for _, c := range res.Items {
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, runtime.Container{
			ID: c.ID, Name: name, Image: c.Image, State: string(c.State), Status: c.Status, Labels: c.Labels,
		})
	}
	slices.SortFunc(out, func(a, b runtime.Container) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func addr(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// InspectContainer implements runtime.Containers.
func (r *Runtime) InspectContainer(ctx context.Context, nameOrID string) (runtime.ContainerDetails, error) {
	res, err := r.c.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
	if err != nil {
		return runtime.ContainerDetails{}, r.wrap(err, "inspect container %q", nameOrID)
	}
	c := res.Container
	d := runtime.ContainerDetails{
		ID:           c.ID,
		Name:         strings.TrimPrefix(c.Name, "/"),
		ImageID:      c.Image,
		Created:      parseTime(c.Created),
		RestartCount: c.RestartCount,
		Networks:     map[string]runtime.NetworkEndpoint{},
		Raw:          res.Raw,
	}
	if c.Config != nil {
		d.Image = c.Config.Image
		d.Labels = c.Config.Labels
	}
	if s := c.State; s != nil {
		d.State = runtime.ContainerState{
			Status: string(s.Status), Running: s.Running, ExitCode: s.ExitCode, OOMKilled: s.OOMKilled,
			Error: s.Error, StartedAt: parseTime(s.StartedAt), FinishedAt: parseTime(s.FinishedAt),
		}
	}
	if ns := c.NetworkSettings; ns != nil {
		for name, ep := range ns.Networks {
			if ep != nil {
				d.Networks[name] = runtime.NetworkEndpoint{IPv4: addr(ep.IPAddress), IPv6: addr(ep.GlobalIPv6Address), GatewayIPv4: addr(ep.Gateway)}
			}
		}
		for port, bindings := range ns.Ports {
			for _, b := range bindings {
				hp, _ := strconv.Atoi(b.HostPort)
				d.Ports = append(d.Ports, runtime.PortBinding{
					ContainerPort: int(port.Num()), Protocol: string(port.Proto()), HostIP: addr(b.HostIP), HostPort: hp,
				})
			}
		}
		slices.SortFunc(d.Ports, func(a, b runtime.PortBinding) int { return a.ContainerPort - b.ContainerPort })
	}
	return d, nil
}

// RunContainer implements runtime.Containers. A container that was created
// but failed to start is removed again, so a failed run leaves nothing.
func (r *Runtime) RunContainer(ctx context.Context, spec runtime.ContainerSpec) (string, error) {
	if spec.Image == "" {
		return "", fmt.Errorf("run container %q: no image given", spec.Name)
	}
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Cmd,
		Env:        spec.Env,
		User:       spec.User,
		Labels:     spec.Labels,
	}
	hc := &container.HostConfig{
		Privileged: spec.Privileged,
		Tmpfs:      spec.Tmpfs,
		Binds:      spec.Binds,
		AutoRemove: spec.AutoRemove,
	}
	if len(spec.Volumes) > 0 {
		cfg.Volumes = map[string]struct{}{}
		for _, v := range spec.Volumes {
			cfg.Volumes[v] = struct{}{}
		}
	}
	ulimits := spec.Ulimits
	if len(ulimits) == 0 {
		ulimits = r.defaultUlimits
	}
	for _, u := range ulimits {
		hc.Ulimits = append(hc.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if len(spec.PublishPorts) > 0 {
		cfg.ExposedPorts = network.PortSet{}
		hc.PortBindings = network.PortMap{}
		for _, p := range spec.PublishPorts {
			port, ok := network.PortFrom(uint16(p), network.TCP)
			if !ok {
				return "", fmt.Errorf("run container %q: invalid port %d", spec.Name, p)
			}
			cfg.ExposedPorts[port] = struct{}{}
			hc.PortBindings[port] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1")}}
		}
	}
	var nc *network.NetworkingConfig
	if spec.Network != "" {
		hc.NetworkMode = container.NetworkMode(spec.Network)
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{spec.Network: {}}}
	}
	created, err := r.c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: spec.Name, Config: cfg, HostConfig: hc, NetworkingConfig: nc})
	if err != nil {
		return "", r.wrap(err, "create container %q from image %q", spec.Name, spec.Image)
	}
	if _, err := r.c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		// Best effort, with a fresh context: ctx may be what ended.
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = r.c.ContainerRemove(rmCtx, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}) // the start's error is reported; a container left is labelled and reaped
		return "", r.wrap(err, "start container %q", spec.Name)
	}
	return created.ID, nil
}

// Exec implements runtime.Containers. It makes the three calls the docker
// CLI makes (create, start with the stream attached, inspect for the exit
// code) and nothing else: BenchmarkExecPhases shows the rest of an exec's
// time is the engine's.
func (r *Runtime) Exec(ctx context.Context, nameOrID string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
	if len(opts.Cmd) == 0 {
		return runtime.ExecResult{}, fmt.Errorf("exec in container %q: empty command", nameOrID)
	}
	created, err := r.c.ExecCreate(ctx, nameOrID, client.ExecCreateOptions{
		User: opts.User, Privileged: opts.Privileged, Env: opts.Env, WorkingDir: opts.WorkingDir, Cmd: opts.Cmd,
		AttachStdin: opts.Stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return runtime.ExecResult{}, r.wrap(err, "%s", execWhat(nameOrID, opts.Cmd))
	}
	att, err := r.c.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return runtime.ExecResult{}, r.wrap(err, "%s: attach", execWhat(nameOrID, opts.Cmd))
	}
	defer att.Close()

	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if opts.Stdin != nil {
		go func() {
			// An error here shows up as the command's own failure.
			_, _ = io.Copy(att.Conn, opts.Stdin)
			_ = att.CloseWrite() // likewise: the command then reads no end of input
		}()
	}
	// The output is read here rather than in a goroutine: when ctx ends,
	// closing the connection unblocks the read. The process itself cannot
	// be stopped through the API and may keep running.
	stop := context.AfterFunc(ctx, att.Close)
	_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
	if !stop() {
		return runtime.ExecResult{}, fmt.Errorf("%s: %w", execWhat(nameOrID, opts.Cmd), ctx.Err())
	}
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("%s: read output: %w", execWhat(nameOrID, opts.Cmd), err)
	}
	return r.execExitCode(ctx, created.ID, nameOrID, opts.Cmd)
}

// execWhat names an exec in errors; built only when one is returned.
func execWhat(nameOrID string, cmd []string) string {
	return fmt.Sprintf("exec %q in container %q", strings.Join(cmd, " "), nameOrID)
}

// execExitCode reads the exit code once the output stream ended. The engine
// may report the exec as running for a moment after closing its stream, so
// it is polled briefly, within ctx.
func (r *Runtime) execExitCode(ctx context.Context, execID, nameOrID string, cmd []string) (runtime.ExecResult, error) {
	delay := 5 * time.Millisecond
	for {
		res, err := r.c.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return runtime.ExecResult{}, r.wrap(err, "%s: inspect", execWhat(nameOrID, cmd))
		}
		if !res.Running {
			return runtime.ExecResult{ExitCode: res.ExitCode}, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return runtime.ExecResult{}, fmt.Errorf("%s: waiting for exit code: %w", execWhat(nameOrID, cmd), ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// CopyFrom implements runtime.Containers.
func (r *Runtime) CopyFrom(ctx context.Context, nameOrID, path string) (io.ReadCloser, error) {
	res, err := r.c.CopyFromContainer(ctx, nameOrID, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, r.wrap(err, "copy %q from container %q", path, nameOrID)
	}
	return res.Content, nil
}

// CopyTo implements runtime.Containers.
func (r *Runtime) CopyTo(ctx context.Context, nameOrID, dir string, content io.Reader) error {
	if _, err := r.c.CopyToContainer(ctx, nameOrID, client.CopyToContainerOptions{DestinationPath: dir, Content: content}); err != nil {
		return r.wrap(err, "copy to %q in container %q", dir, nameOrID)
	}
	return nil
}

// Logs implements runtime.Containers.
func (r *Runtime) Logs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error {
	return r.logs(ctx, nameOrID, false, stdout, stderr)
}

// FollowLogs implements runtime.Containers.
func (r *Runtime) FollowLogs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error {
	err := r.logs(ctx, nameOrID, true, stdout, stderr)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("follow logs of container %q: %w (%w)", nameOrID, ctx.Err(), err)
	}
	return err
}

func (r *Runtime) logs(ctx context.Context, nameOrID string, follow bool, stdout, stderr io.Writer) error {
	info, err := r.c.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
	if err != nil {
		return r.wrap(err, "get logs of container %q", nameOrID)
	}
	res, err := r.c.ContainerLogs(ctx, nameOrID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow})
	if err != nil {
		return r.wrap(err, "get logs of container %q", nameOrID)
	}
	defer res.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if info.Container.Config != nil && info.Container.Config.Tty {
		// A TTY merges the streams; there is no framing to strip.
		_, err = io.Copy(stdout, res)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, res)
	}
	if err != nil {
		return fmt.Errorf("read logs of container %q: %w", nameOrID, err)
	}
	return nil
}

// Kill implements runtime.Containers.
func (r *Runtime) Kill(ctx context.Context, nameOrID, signal string) error {
	if signal == "" {
		signal = "SIGKILL"
	}
	if _, err := r.c.ContainerKill(ctx, nameOrID, client.ContainerKillOptions{Signal: signal}); err != nil {
		err = r.wrap(err, "send %s to container %q", signal, nameOrID)
		if isKillNotSeen(err) {
			return r.awaitUnkillable(ctx, nameOrID, err)
		}
		return err
	}
	return nil
}

// Stop implements runtime.Containers.
func (r *Runtime) Stop(ctx context.Context, nameOrID string, timeout time.Duration) error {
	secs := int(timeout.Round(time.Second) / time.Second)
	if _, err := r.c.ContainerStop(ctx, nameOrID, client.ContainerStopOptions{Timeout: &secs}); err != nil {
		err = r.wrap(err, "stop container %q", nameOrID)
		if isKillNotSeen(err) {
			return r.awaitUnkillable(ctx, nameOrID, err)
		}
		return err
	}
	return nil
}

// Start implements runtime.Containers.
func (r *Runtime) Start(ctx context.Context, nameOrID string) error {
	if _, err := r.c.ContainerStart(ctx, nameOrID, client.ContainerStartOptions{}); err != nil {
		return r.wrap(err, "start container %q", nameOrID)
	}
	return nil
}

// Wait implements runtime.Containers.
func (r *Runtime) Wait(ctx context.Context, nameOrID string) (int, error) {
	res := r.c.ContainerWait(ctx, nameOrID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case w := <-res.Result:
		if w.Error != nil && w.Error.Message != "" {
			return int(w.StatusCode), fmt.Errorf("wait for container %q: %s", nameOrID, w.Error.Message)
		}
		return int(w.StatusCode), nil
	case err := <-res.Error:
		return 0, r.wrap(err, "wait for container %q", nameOrID)
	}
}

// RemoveContainer implements runtime.Containers. A running container that
// the engine cannot kill (thaw.go) is thawed if the engine is local, waited
// for, and removed again.
func (r *Runtime) RemoveContainer(ctx context.Context, nameOrID string) error {
	err := r.remove(ctx, nameOrID)
	if isKillNotSeen(err) {
		if err := r.awaitUnkillable(ctx, nameOrID, err); err != nil {
			return err
		}
		err = r.remove(ctx, nameOrID)
	}
	return err
}

func (r *Runtime) remove(ctx context.Context, nameOrID string) error {
	_, err := r.c.ContainerRemove(ctx, nameOrID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil {
		err = r.wrap(err, "remove container %q", nameOrID)
		if errors.Is(err, runtime.ErrNotFound) {
			return nil
		}
		// Removal already in progress (AutoRemove, or a concurrent caller).
		if errors.Is(err, runtime.ErrConflict) && strings.Contains(err.Error(), "already in progress") {
			return nil
		}
		return err
	}
	return nil
}

// Commit implements runtime.Containers. The configuration changes are sent
// as Dockerfile instructions, which the engine applies over the container's
// own configuration.
func (r *Runtime) Commit(ctx context.Context, nameOrID string, opts runtime.CommitOptions) (string, error) {
	var changes []string
	jsonArray := func(v []string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	if opts.Entrypoint != nil {
		changes = append(changes, "ENTRYPOINT "+jsonArray(opts.Entrypoint))
	}
	if opts.Cmd != nil {
		changes = append(changes, "CMD "+jsonArray(opts.Cmd))
	}
	for _, e := range opts.Env {
		changes = append(changes, "ENV "+e)
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Labels)) {
		changes = append(changes, fmt.Sprintf("LABEL %s=%s", strconv.Quote(k), strconv.Quote(opts.Labels[k])))
	}
	if opts.StopSignal != "" {
		changes = append(changes, "STOPSIGNAL "+opts.StopSignal)
	}
	// An explicit (empty) config: Docker fills its blanks from the
	// container's, and Podman's service rejects a commit without a body.
	res, err := r.c.ContainerCommit(ctx, nameOrID, client.ContainerCommitOptions{Reference: opts.Ref, Changes: changes, Config: &container.Config{}})
	if err != nil {
		return "", r.wrap(err, "commit container %q as %q", nameOrID, opts.Ref)
	}
	return res.ID, nil
}
