// Package moby implements runtime.Runtime with the Moby client
// (github.com/moby/moby/client), so the harness works against any endpoint
// that speaks the Docker Engine API: Docker itself, and Podman's service
// socket ("podman system service").
//
// The endpoint is configured like the docker CLI: DOCKER_HOST,
// DOCKER_API_VERSION, DOCKER_CERT_PATH and DOCKER_TLS_VERIFY, unless Config
// says otherwise. The API version is negotiated with the engine.
//
// This package must not run the docker CLI, and no type of the Moby client
// may appear in its exported API: callers see only package runtime.
package moby

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

var _ runtime.Runtime = (*Runtime)(nil)

// Config configures a Runtime. The zero value reads the environment.
type Config struct {
	// Host is the engine endpoint, e.g. unix:///run/podman/podman.sock or
	// tcp://127.0.0.1:2375. If empty, DOCKER_HOST, then the platform default
	// (unix:///var/run/docker.sock).
	Host string
	// APIVersion pins the API version. If empty, DOCKER_API_VERSION, then
	// negotiated with the engine on first use.
	APIVersion string
	// ConnectTimeout bounds the check that the engine answers, made by New.
	// If zero, 10s.
	ConnectTimeout time.Duration
	// DefaultUlimits apply to containers whose spec sets none. If nil: none
	// for Docker, which inherits its own limits; for Podman, nofile and
	// nproc at this process's hard limits (Podman's defaults exceed them on
	// hosts without CAP_SYS_RESOURCE, and container creation fails).
	DefaultUlimits []runtime.Ulimit
}

// Runtime talks to one engine. It is safe for concurrent use.
type Runtime struct {
	c              *client.Client
	host           string
	podman         bool
	defaultUlimits []runtime.Ulimit
	// thawer thaws a container the engine cannot kill (thaw.go).
	thawer thawer
}

// New connects to the engine and checks that it answers within
// cfg.ConnectTimeout, so that a missing daemon is reported at once, with the
// endpoint named, instead of at the first real call.
func New(cfg Config) (*Runtime, error) {
	opts := []client.Opt{client.FromEnv}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	if cfg.APIVersion != "" {
		opts = append(opts, client.WithAPIVersion(cfg.APIVersion))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("configure container engine client (DOCKER_HOST=%q): %w", os.Getenv("DOCKER_HOST"), err)
	}
	r := &Runtime{c: c, host: c.DaemonHost(), thawer: hostThawer}
	timeout := cfg.ConnectTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		_ = c.Close() // a client never used: nothing to lose
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return nil, fmt.Errorf("connect to container engine at %s: %w: %w", r.host, runtime.ErrUnavailable, err)
	}
	v, err := c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		_ = c.Close() // a client never used: nothing to lose
		return nil, r.wrap(err, "get version of container engine at %s", r.host)
	}
	for _, comp := range v.Components {
		if strings.Contains(comp.Name, "Podman") {
			r.podman = true
		}
	}
	r.defaultUlimits = cfg.DefaultUlimits
	if r.defaultUlimits == nil && r.podman {
		r.defaultUlimits = hostUlimits()
	}
	return r, nil
}

// hostUlimits returns limits a Podman service on this host can grant
// without CAP_SYS_RESOURCE: nofile at this process's hard limit, and nproc
// at 4096 at most, since the service may run with a lower nproc limit than
// this process (seen: 32768 against 96551) and 4096 processes per
// container is ample for what the harness runs.
func hostUlimits() []runtime.Ulimit {
	var out []runtime.Ulimit
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil && lim.Max != unix.RLIM_INFINITY {
		out = append(out, runtime.Ulimit{Name: "nofile", Soft: int64(lim.Max), Hard: int64(lim.Max)})
	}
	nproc := int64(4096)
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err == nil && lim.Max != unix.RLIM_INFINITY {
		nproc = min(nproc, int64(lim.Max))
	}
	return append(out, runtime.Ulimit{Name: "nproc", Soft: nproc, Hard: nproc})
}

// IsPodman reports whether the engine is Podman's Docker-compatible service.
func (r *Runtime) IsPodman() bool { return r.podman }

// Endpoint returns the engine endpoint this Runtime talks to.
func (r *Runtime) Endpoint() string { return r.host }

// Close implements runtime.Runtime.
func (r *Runtime) Close() error { return r.c.Close() }

// Info implements runtime.Runtime.
func (r *Runtime) Info(ctx context.Context) (runtime.EngineInfo, error) {
	res, err := r.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return runtime.EngineInfo{}, r.wrap(err, "get engine info")
	}
	v, err := r.c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return runtime.EngineInfo{}, r.wrap(err, "get engine version")
	}
	i := res.Info
	rootless := false
	for _, o := range i.SecurityOptions {
		if o == "name=rootless" {
			rootless = true
		}
	}
	return runtime.EngineInfo{
		Endpoint:      r.host,
		Name:          v.Platform.Name,
		Version:       v.Version,
		APIVersion:    r.c.ClientVersion(),
		OS:            i.OperatingSystem,
		Arch:          i.Architecture,
		StorageDriver: i.Driver,
		CgroupVersion: i.CgroupVersion,
		CgroupDriver:  i.CgroupDriver,
		NCPU:          i.NCPU,
		MemTotal:      i.MemTotal,
		Rootless:      rootless,
		Podman:        r.podman,
	}, nil
}

// Events implements runtime.Runtime.
func (r *Runtime) Events(ctx context.Context, since, until time.Time) ([]runtime.Event, error) {
	if until.Before(since) {
		return nil, fmt.Errorf("engine events: until %s is before since %s", until, since)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := r.c.Events(ctx, client.EventsListOptions{
		Since: strconv.FormatInt(since.Unix(), 10),
		// The engine ends the stream at until (whole seconds: round up).
		Until: strconv.FormatInt(until.Add(time.Second-1).Unix(), 10),
	})
	var out []runtime.Event
	for {
		select {
		case m := <-res.Messages:
			t := time.Unix(0, m.TimeNano)
			if m.TimeNano == 0 {
				t = time.Unix(m.Time, 0)
			}
			out = append(out, runtime.Event{Time: t, Type: string(m.Type), Action: string(m.Action), ID: m.Actor.ID, Attributes: m.Actor.Attributes})
		case err := <-res.Err:
			if err == nil || errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, r.wrap(err, "engine events")
		}
	}
}

// wrap turns a client error into one that names what was being done and
// wraps the runtime sentinel matching its class.
func (r *Runtime) wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var class error
	switch {
	case cerrdefs.IsNotFound(err):
		class = runtime.ErrNotFound
	case cerrdefs.IsConflict(err) || cerrdefs.IsAlreadyExists(err):
		class = runtime.ErrConflict
	case strings.Contains(err.Error(), "container state improper"):
		// Podman's words, with a status that does not say conflict.
		class = runtime.ErrConflict
	case client.IsErrConnectionFailed(err):
		class = runtime.ErrUnavailable
	}
	if class != nil && !errors.Is(err, class) {
		return fmt.Errorf("%s: %w: %w", what, class, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
