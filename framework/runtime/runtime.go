// Package runtime is the harness's one door to a container engine.
//
// Everything capd-e2e does with containers — inspecting CAPD's machines,
// exec'ing commands in them, copying logs out, killing them to simulate a
// fault, checking for leaks, moving images around — goes through the Runtime
// interface declared here. The interface uses only this package's types, so
// callers never import an engine's client library, and a second engine (or a
// fake, see package fake) can implement it.
//
// This package must not talk to an engine itself: implementations live in
// sub-packages (moby for any Docker-API endpoint, including Podman's service
// socket; fake for unit tests). Dependencies are passed explicitly: nothing
// here reads or writes a context.Value.
package runtime

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Runtime is a container engine. Every method takes a context first and
// returns when it is done or cancelled; implementations must be safe for
// concurrent use.
//
// Errors name the object they concern ("inspect container \"x\": ...") and
// can be classified with errors.Is against ErrNotFound, ErrConflict and
// ErrUnavailable.
type Runtime interface {
	Containers
	Images
	Resources

	// Info describes the engine: its name, version, API version and the
	// endpoint it was reached at. It is a cheap way to check the engine is up.
	Info(ctx context.Context) (EngineInfo, error)

	// Events returns the engine's events between since and until (both
	// required: the call does not follow), oldest first: what a failed
	// job's artifacts keep of the engine's side (docker events).
	Events(ctx context.Context, since, until time.Time) ([]Event, error)

	// Close releases the connection to the engine. The Runtime must not be
	// used afterwards.
	Close() error
}

// Containers is the part of a Runtime that works on containers. Consumers
// that only read from machines (log collection, snapshots) depend on this
// narrower interface.
type Containers interface {
	// ListContainers returns the containers matching f, running or not,
	// sorted by name.
	ListContainers(ctx context.Context, f Filter) ([]Container, error)

	// InspectContainer returns the full state of one container, by name or ID.
	// It returns an error wrapping ErrNotFound when there is none.
	InspectContainer(ctx context.Context, nameOrID string) (ContainerDetails, error)

	// RunContainer creates and starts a container and returns its ID.
	RunContainer(ctx context.Context, spec ContainerSpec) (string, error)

	// Exec runs a command in a running container and waits for it to end.
	// Stdin, if set, is copied to the command's standard input and then
	// closed. Stdout and stderr are written, demultiplexed, to the writers in
	// opts (a nil writer discards). The returned ExecResult carries the exit
	// code; a non-zero exit code is not an error of Exec (see Output for
	// that). Exec returns an error when the command could not be started, the
	// stream broke, or ctx ended first; in the last case the error wraps
	// ctx.Err() and the command may still be running in the container.
	Exec(ctx context.Context, nameOrID string, opts ExecOptions) (ExecResult, error)

	// CopyFrom returns a tar stream of path (a file or a directory tree) in
	// the container. The caller must close it.
	CopyFrom(ctx context.Context, nameOrID, path string) (io.ReadCloser, error)

	// CopyTo extracts the tar stream content into dir in the container.
	CopyTo(ctx context.Context, nameOrID, dir string, content io.Reader) error

	// Logs writes the container's own output (what its main process printed)
	// to stdout and stderr, demultiplexed. It does not follow.
	Logs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error

	// FollowLogs is Logs that follows: it writes the container's output as
	// it is printed, from the start, and returns when the output ends (the
	// container stopped), or when ctx ends, with an error wrapping
	// ctx.Err().
	FollowLogs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error

	// Kill sends signal (a name such as "SIGKILL" or "KILL", or a number) to
	// the container's main process. An empty signal means SIGKILL.
	Kill(ctx context.Context, nameOrID, signal string) error

	// Stop stops a container, killing it after timeout.
	Stop(ctx context.Context, nameOrID string, timeout time.Duration) error

	// Start starts an existing, stopped container.
	Start(ctx context.Context, nameOrID string) error

	// Wait blocks until the container is not running and returns its exit
	// code.
	Wait(ctx context.Context, nameOrID string) (int, error)

	// RemoveContainer removes a container, killing it first if it runs, and
	// its anonymous volumes. Removing a container that does not exist is not
	// an error.
	RemoveContainer(ctx context.Context, nameOrID string) error

	// Commit makes an image of a container's filesystem, tagged ref, with
	// the given image configuration changes.
	Commit(ctx context.Context, nameOrID string, opts CommitOptions) (string, error)
}

// Images is the part of a Runtime that stores images.
type Images interface {
	// InspectImage returns an image's ID, tags, labels and size. It returns an
	// error wrapping ErrNotFound when the engine does not have it.
	InspectImage(ctx context.Context, ref string) (Image, error)

	// ListImages returns every tagged image the engine stores.
	ListImages(ctx context.Context) ([]Image, error)

	// SaveImages streams a docker-archive tar holding refs, for LoadImages or
	// `ctr images import`. The caller must close it.
	SaveImages(ctx context.Context, refs ...string) (io.ReadCloser, error)

	// LoadImages reads a docker-archive (or OCI layout) tar and stores its
	// images. It returns once the engine has read and stored all of it.
	LoadImages(ctx context.Context, archive io.Reader) error

	// TagImage adds the tag target to the image source.
	TagImage(ctx context.Context, source, target string) error

	// RemoveImage removes a tag, and the image when it was its last tag.
	// Removing an image that does not exist is not an error.
	RemoveImage(ctx context.Context, ref string) error

	// PullImage pulls ref from its registry (anonymously) and waits until
	// the engine stored it. The error wraps ErrNotFound when the registry
	// answered that it has no such image; any other error (the registry
	// cannot be reached, refused the request, ...) does not.
	PullImage(ctx context.Context, ref string) error

	// PushImage pushes ref to the registry its name designates
	// (anonymously) and waits until the push completed.
	PushImage(ctx context.Context, ref string) error
}

// Resources is the part of a Runtime that manages networks and volumes.
type Resources interface {
	// CreateNetwork creates a bridge network and returns its ID.
	CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error)
	// ListNetworks returns the networks matching f (Name and Labels are used).
	ListNetworks(ctx context.Context, f Filter) ([]Network, error)
	// RemoveNetwork removes a network. A missing network is not an error.
	RemoveNetwork(ctx context.Context, nameOrID string) error
	// ConnectNetwork attaches a container to a network.
	ConnectNetwork(ctx context.Context, network, container string) error
	// DisconnectNetwork detaches a container from a network, cutting it off.
	DisconnectNetwork(ctx context.Context, network, container string) error

	// CreateVolume creates a named volume.
	CreateVolume(ctx context.Context, name string, labels map[string]string) error
	// ListVolumes returns the volumes matching f (Name and Labels are used).
	ListVolumes(ctx context.Context, f Filter) ([]Volume, error)
	// RemoveVolume removes a volume. A missing volume is not an error.
	RemoveVolume(ctx context.Context, name string) error
}

// Filter selects containers, networks or volumes. Zero fields select
// everything; set fields must all match.
type Filter struct {
	// Name matches objects whose name contains Name (the engine's semantics:
	// a substring, or an anchored regular expression such as "^kind-").
	Name string
	// Labels must all be present; an empty value matches any value.
	Labels map[string]string
	// Running, for containers, keeps only running ones.
	Running bool
}

// Container is one row of a container listing.
type Container struct {
	ID     string
	Name   string // without the leading slash
	Image  string
	State  string // created, running, paused, restarting, removing, exited or dead
	Status string // human-readable, e.g. "Up 2 minutes"
	Labels map[string]string
}

// ContainerDetails is what an inspect tells about one container.
type ContainerDetails struct {
	ID      string
	Name    string
	Image   string // the image reference the container was created from
	ImageID string
	Created time.Time
	Labels  map[string]string
	State   ContainerState
	// RestartCount is how often the engine restarted the container.
	RestartCount int
	// Networks maps each attached network's name to the container's
	// addresses on it.
	Networks map[string]NetworkEndpoint
	// Ports lists the published ports.
	Ports []PortBinding
	// Raw is the engine's own inspect document (JSON), kept for artifacts.
	Raw []byte `json:"-"`
}

// ContainerState is the lifecycle state of a container.
type ContainerState struct {
	Status     string // created, running, paused, restarting, removing, exited or dead
	Running    bool
	ExitCode   int
	OOMKilled  bool
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
}

// NetworkEndpoint is a container's attachment to one network.
type NetworkEndpoint struct {
	IPv4 string
	IPv6 string
	// GatewayIPv4 is the network's IPv4 gateway as the container sees
	// it: on a bridge network, the engine host's address on it.
	GatewayIPv4 string
}

// PortBinding maps a container port to a host address.
type PortBinding struct {
	ContainerPort int
	Protocol      string // tcp or udp
	HostIP        string
	HostPort      int
}

// HostPort returns the host port bound to containerPort/tcp, or 0.
func (d ContainerDetails) HostPort(containerPort int) int {
	for _, p := range d.Ports {
		if p.ContainerPort == containerPort && p.Protocol == "tcp" && p.HostPort != 0 {
			return p.HostPort
		}
	}
	return 0
}

// ContainerSpec describes a container to run.
type ContainerSpec struct {
	Name       string
	Image      string
	Entrypoint []string // if nil, the image's
	Cmd        []string // if nil, the image's
	Env        []string
	// User runs the main process as "uid[:gid]" or a user name; if empty,
	// the image's.
	User   string
	Labels map[string]string
	// Network to attach to; if empty, the engine's default.
	Network string
	// Privileged runs the container with all the engine's capabilities.
	Privileged bool
	// Tmpfs maps container paths to mount options.
	Tmpfs map[string]string
	// Binds are host-path:container-path[:opts] mounts.
	Binds []string
	// Volumes are container paths that get an anonymous volume.
	Volumes []string
	// Ulimits set explicit resource limits. Podman's default limits exceed
	// what hosts without CAP_SYS_RESOURCE allow; setting them here makes a
	// container start on both engines.
	Ulimits []Ulimit
	// PublishPorts publishes container ports (tcp) on random host ports of
	// 127.0.0.1.
	PublishPorts []int
	// AutoRemove removes the container when it exits.
	AutoRemove bool
}

// Ulimit is one resource limit, e.g. {"nofile", 1024, 1024}.
type Ulimit struct {
	Name string
	Soft int64
	Hard int64
}

// ExecOptions describes a command to run in a container.
type ExecOptions struct {
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
	Privileged bool
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
}

// ExecResult is the outcome of a command that ran to its end.
type ExecResult struct {
	ExitCode int
}

// CommitOptions configures the image made from a container.
type CommitOptions struct {
	// Ref tags the new image, e.g. "kindest/node:v1.36.3".
	Ref string
	// Entrypoint and Cmd replace the image's when not nil.
	Entrypoint []string
	Cmd        []string
	// Env, when not nil, replaces the image's environment.
	Env []string
	// Labels are added to the image on top of the container's own labels,
	// which the engine copies into the image (an empty value blanks one).
	Labels map[string]string
	// StopSignal, when set, replaces the image's.
	StopSignal string
}

// Image describes a stored image.
type Image struct {
	ID       string
	RepoTags []string
	Labels   map[string]string
	Size     int64
	Created  time.Time
}

// Network is a container network.
type Network struct {
	ID     string
	Name   string
	Driver string
	Labels map[string]string
}

// Volume is a named volume.
type Volume struct {
	Name   string
	Driver string
	Labels map[string]string
}

// Event is one of the engine's events.
type Event struct {
	Time time.Time
	// Type is what it concerns (container, image, network, volume).
	Type string
	// Action is what happened (create, start, die, oom, destroy, ...).
	Action string
	// ID is the object's ID; Attributes carries its name, image, exit
	// code, labels.
	ID         string
	Attributes map[string]string
}

// EngineInfo describes the engine a Runtime talks to.
type EngineInfo struct {
	// Endpoint is where the engine was reached, e.g. unix:///var/run/docker.sock.
	Endpoint string
	// Name is the engine's product name ("Docker Engine - Community", "Podman Engine", ...).
	Name          string
	Version       string
	APIVersion    string
	OS            string
	Arch          string
	StorageDriver string
	CgroupVersion string
	CgroupDriver  string
	NCPU          int
	MemTotal      int64
	// Rootless is true when the engine runs without root.
	Rootless bool
	// Podman is true when the engine is Podman's Docker-compatible service
	// (its version lists a "Podman Engine" component): its Version is
	// Podman's (4.3.1), not a Docker version.
	Podman bool
}

// SocketPath returns the host path of the engine's unix socket, the one a
// container that talks to the engine (CAPD, the cloud-controller-manager)
// must have mounted: /var/run/docker.sock for a default Docker,
// /run/podman/podman.sock for a rootful Podman service. It fails for an
// engine not reached through a unix socket (tcp://, ssh://), whose socket
// cannot be mounted.
func (i EngineInfo) SocketPath() (string, error) {
	path, ok := strings.CutPrefix(i.Endpoint, "unix://")
	if !ok || path == "" {
		return "", fmt.Errorf("engine at %q is not reached through a unix socket: CAPD and the cloud-controller-manager need one to mount", i.Endpoint)
	}
	return path, nil
}

// Product names the engine for messages: "Podman 4.3.1", "Docker 29.1.3".
func (i EngineInfo) Product() string {
	if i.Podman {
		return "Podman " + i.Version
	}
	return "Docker " + i.Version
}
