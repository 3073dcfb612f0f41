// Package fake is an in-memory container engine for unit tests: the
// methods of runtime.Runtime that the harness's consumers use (each takes
// the narrow interface of what it needs, see e.g. logs.Engine and
// leak.Lister), not all of them.
//
// Each Runtime is independent (no package-level state) and safe for
// concurrent use, so tests can run in parallel. It keeps containers,
// images, networks and volumes in maps, records every call, and lets a test
// script command results with an ExecFunc and a file tree per container for
// CopyFrom. It is not a container engine: nothing runs, and integration
// tests must use a real engine through package moby.
package fake

// One file: every method works on the same maps under one lock, and reads
// best beside the others.

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// ExecFunc scripts the outcome of Exec. It may write to opts.Stdout and
// opts.Stderr (which the fake never leaves nil) and should honour ctx.
type ExecFunc func(ctx context.Context, container string, opts runtime.ExecOptions) (runtime.ExecResult, error)

// Container is a container held by the fake.
type Container struct {
	runtime.ContainerDetails
	// Files is the container's file tree for CopyFrom: path -> content.
	// Paths are absolute, e.g. "/var/log/pods/ns_pod/c/0.log".
	Files map[string][]byte
	// Stdout and Stderr are what Logs and FollowLogs write.
	Stdout, Stderr []byte
}

// Call records one method call.
type Call struct {
	Method string
	Args   []string
}

// Runtime is the fake. The zero value is not usable; call New.
type Runtime struct {
	mu         sync.Mutex
	containers map[string]*Container // by name
	images     map[string]runtime.Image
	registry   map[string]runtime.Image
	pullErrs   map[string]error
	networks   map[string]runtime.Network
	volumes    map[string]runtime.Volume
	calls      []Call
	exec       ExecFunc
	closed     bool
	nextID     int
	// changed is closed, and replaced, when a container stops or goes.
	changed chan struct{}

	// InfoResult is returned by Info.
	InfoResult runtime.EngineInfo
	// EventsResult are the engine's events, for Events.
	EventsResult []runtime.Event
}

// New returns an empty fake runtime.
func New() *Runtime {
	return &Runtime{
		containers: map[string]*Container{},
		images:     map[string]runtime.Image{},
		registry:   map[string]runtime.Image{},
		pullErrs:   map[string]error{},
		networks:   map[string]runtime.Network{},
		volumes:    map[string]runtime.Volume{},
		changed:    make(chan struct{}),
		InfoResult: runtime.EngineInfo{Endpoint: "fake://", Name: "fake", Version: "0.0.0", APIVersion: "1.41"},
	}
}

// SetExec sets the function that decides Exec's outcome. Without one, every
// command exits 0 and prints nothing.
func (f *Runtime) SetExec(fn ExecFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exec = fn
}

// AddContainer adds a container; its ID defaults to its name and its state to
// running.
func (f *Runtime) AddContainer(c Container) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.ID == "" {
		c.ID = c.Name
	}
	if c.State.Status == "" {
		c.State = runtime.ContainerState{Status: "running", Running: true}
	}
	f.containers[c.Name] = &c
}

// SetState changes a container's state, e.g. to simulate that it died.
func (f *Runtime) SetState(name string, s runtime.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[name]; ok {
		c.State = s
		f.notifyLocked()
	}
}

// AddImage adds an image under each of its RepoTags.
func (f *Runtime) AddImage(img runtime.Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range img.RepoTags {
		f.images[t] = img
	}
}

// AddRegistryImage puts an image into the fake's registry under ref, for
// PullImage to find.
func (f *Runtime) AddRegistryImage(ref string, img runtime.Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registry[ref] = img
}

// RegistryImages returns the references in the fake's registry (those
// added and those pushed), sorted.
func (f *Runtime) RegistryImages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.registry))
}

// SetPullError makes PullImage of references starting with prefix fail
// with err (e.g. a registry host that cannot be reached).
func (f *Runtime) SetPullError(prefix string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pullErrs[prefix] = err
}

// Calls returns a copy of the calls made so far.
func (f *Runtime) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *Runtime) record(method string, args ...string) error {
	f.calls = append(f.calls, Call{Method: method, Args: args})
	if f.closed {
		return fmt.Errorf("%s: runtime closed: %w", method, runtime.ErrUnavailable)
	}
	return nil
}

func (f *Runtime) find(nameOrID string) (*Container, error) {
	if c, ok := f.containers[nameOrID]; ok {
		return c, nil
	}
	for _, c := range f.containers {
		if c.ID == nameOrID {
			return c, nil
		}
	}
	return nil, fmt.Errorf("container %q: %w", nameOrID, runtime.ErrNotFound)
}

func matchName(filter, name string) bool {
	if filter == "" {
		return true
	}
	if re, err := regexp.Compile(filter); err == nil {
		return re.MatchString(name)
	}
	return strings.Contains(name, filter)
}

func matchLabels(want, have map[string]string) bool {
	for k, v := range want {
		hv, ok := have[k]
		if !ok || (v != "" && hv != v) {
			return false
		}
	}
	return true
}

// Close marks the fake closed; later calls fail with ErrUnavailable.
func (f *Runtime) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// Info implements runtime.Runtime: it returns InfoResult.
func (f *Runtime) Info(context.Context) (runtime.EngineInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Info"); err != nil {
		return runtime.EngineInfo{}, err
	}
	return f.InfoResult, nil
}

// Events implements runtime.Runtime: EventsResult's events between since
// and until.
func (f *Runtime) Events(_ context.Context, since, until time.Time) ([]runtime.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Events"); err != nil {
		return nil, err
	}
	var out []runtime.Event
	for _, e := range f.EventsResult {
		if !e.Time.Before(since) && !e.Time.After(until) {
			out = append(out, e)
		}
	}
	return out, nil
}

// ListContainers implements runtime.Containers.
func (f *Runtime) ListContainers(_ context.Context, flt runtime.Filter) ([]runtime.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListContainers", flt.Name); err != nil {
		return nil, err
	}
	var out []runtime.Container
	for _, c := range f.containers {
		if !matchName(flt.Name, c.Name) || !matchLabels(flt.Labels, c.Labels) || (flt.Running && !c.State.Running) {
			continue
		}
		out = append(out, runtime.Container{ID: c.ID, Name: c.Name, Image: c.Image, State: c.State.Status, Labels: maps.Clone(c.Labels)})
	}
	slices.SortFunc(out, func(a, b runtime.Container) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// InspectContainer implements runtime.Containers.
func (f *Runtime) InspectContainer(_ context.Context, nameOrID string) (runtime.ContainerDetails, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("InspectContainer", nameOrID); err != nil {
		return runtime.ContainerDetails{}, err
	}
	c, err := f.find(nameOrID)
	if err != nil {
		return runtime.ContainerDetails{}, fmt.Errorf("inspect %w", err)
	}
	d := c.ContainerDetails
	d.Labels = maps.Clone(d.Labels)
	d.Networks = maps.Clone(d.Networks)
	d.Ports = slices.Clone(d.Ports)
	if d.Raw == nil {
		d.Raw = []byte(fmt.Sprintf(`{"Id":%q,"Name":"/%s"}`, d.ID, d.Name))
	}
	return d, nil
}

// RunContainer implements runtime.Containers.
func (f *Runtime) RunContainer(_ context.Context, spec runtime.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RunContainer", spec.Name, spec.Image); err != nil {
		return "", err
	}
	if _, ok := f.images[spec.Image]; !ok {
		return "", fmt.Errorf("run container %q: image %q: %w", spec.Name, spec.Image, runtime.ErrNotFound)
	}
	f.nextID++
	id := fmt.Sprintf("fake%06d", f.nextID)
	name := spec.Name
	if name == "" {
		name = id
	}
	if _, ok := f.containers[name]; ok {
		return "", fmt.Errorf("run container %q: %w", name, runtime.ErrConflict)
	}
	f.containers[name] = &Container{ContainerDetails: runtime.ContainerDetails{
		ID: id, Name: name, Image: spec.Image, Labels: maps.Clone(spec.Labels), Created: time.Now(),
		State: runtime.ContainerState{Status: "running", Running: true, StartedAt: time.Now()},
	}}
	return id, nil
}

// Exec implements runtime.Containers by calling the ExecFunc.
func (f *Runtime) Exec(ctx context.Context, nameOrID string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
	f.mu.Lock()
	if err := f.record("Exec", append([]string{nameOrID}, opts.Cmd...)...); err != nil {
		f.mu.Unlock()
		return runtime.ExecResult{}, err
	}
	c, err := f.find(nameOrID)
	if err == nil && !c.State.Running {
		err = fmt.Errorf("container %q is not running: %w", nameOrID, runtime.ErrConflict)
	}
	fn := f.exec
	f.mu.Unlock()
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("exec %q: %w", strings.Join(opts.Cmd, " "), err)
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if fn == nil {
		return runtime.ExecResult{}, ctx.Err()
	}
	return fn(ctx, nameOrID, opts)
}

// CopyFrom implements runtime.Containers: a tar of the container's Files
// under p, named relative to p's parent as the Docker API does.
func (f *Runtime) CopyFrom(_ context.Context, nameOrID, p string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CopyFrom", nameOrID, p); err != nil {
		return nil, err
	}
	c, err := f.find(nameOrID)
	if err != nil {
		return nil, fmt.Errorf("copy %q from %w", p, err)
	}
	p = path.Clean(p)
	var names []string
	for name := range c.Files {
		if name == p || strings.HasPrefix(name, p+"/") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("copy %q from container %q: %w", p, c.Name, runtime.ErrNotFound)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	parent := path.Dir(p)
	for _, name := range names {
		rel := strings.TrimPrefix(strings.TrimPrefix(name, parent), "/")
		data := c.Files[name]
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

// Logs implements runtime.Containers: it writes the container's Stdout
// and Stderr.
func (f *Runtime) Logs(_ context.Context, nameOrID string, stdout, stderr io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Logs", nameOrID); err != nil {
		return err
	}
	_, err := f.writeLogsLocked(nameOrID, stdout, stderr)
	return err
}

// FollowLogs implements runtime.Containers: it writes the container's
// Stdout and Stderr at once (the fake's containers print nothing later),
// then, as an engine's stream does, stays open while the container runs:
// until it stops (Kill, SetState) or is removed, or ctx ends.
func (f *Runtime) FollowLogs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error {
	f.mu.Lock()
	err := f.record("FollowLogs", nameOrID)
	var id string
	if err == nil {
		id, err = f.writeLogsLocked(nameOrID, stdout, stderr)
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	for {
		f.mu.Lock()
		c, err := f.find(id)
		running := err == nil && c.State.Running
		changed := f.changed
		f.mu.Unlock()
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("follow logs of container %q: %w", nameOrID, ctx.Err())
		case <-changed:
		}
	}
}

// writeLogsLocked writes a container's output and returns its ID.
func (f *Runtime) writeLogsLocked(nameOrID string, stdout, stderr io.Writer) (string, error) {
	c, err := f.find(nameOrID)
	if err != nil {
		return "", fmt.Errorf("logs of %w", err)
	}
	if stdout != nil {
		if _, err := stdout.Write(c.Stdout); err != nil {
			return "", err
		}
	}
	if stderr != nil {
		if _, err := stderr.Write(c.Stderr); err != nil {
			return "", err
		}
	}
	return c.ID, nil
}

// notifyLocked wakes whoever waits for a container's state to change
// (FollowLogs).
func (f *Runtime) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Runtime) stopLocked(c *Container, code int) {
	c.State.Running = false
	c.State.Status = "exited"
	c.State.ExitCode = code
	c.State.FinishedAt = time.Now()
	f.notifyLocked()
}

// Kill implements runtime.Containers: the container exits with 128+9.
func (f *Runtime) Kill(_ context.Context, nameOrID, signal string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Kill", nameOrID, signal); err != nil {
		return err
	}
	c, err := f.find(nameOrID)
	if err != nil {
		return fmt.Errorf("kill %w", err)
	}
	if !c.State.Running {
		return fmt.Errorf("kill container %q: not running: %w", c.Name, runtime.ErrConflict)
	}
	f.stopLocked(c, 137)
	return nil
}

// RemoveContainer implements runtime.Containers.
func (f *Runtime) RemoveContainer(_ context.Context, nameOrID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RemoveContainer", nameOrID); err != nil {
		return err
	}
	c, err := f.find(nameOrID)
	if err != nil {
		return nil
	}
	delete(f.containers, c.Name)
	f.notifyLocked()
	return nil
}

// InspectImage implements runtime.Images.
func (f *Runtime) InspectImage(_ context.Context, ref string) (runtime.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("InspectImage", ref); err != nil {
		return runtime.Image{}, err
	}
	img, ok := f.images[ref]
	if !ok {
		return runtime.Image{}, fmt.Errorf("inspect image %q: %w", ref, runtime.ErrNotFound)
	}
	return img, nil
}

// ListImages implements runtime.Images: each image once, in tag order.
func (f *Runtime) ListImages(context.Context) ([]runtime.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListImages"); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []runtime.Image
	for _, ref := range slices.Sorted(maps.Keys(f.images)) {
		if img := f.images[ref]; !seen[img.ID] {
			seen[img.ID] = true
			out = append(out, img)
		}
	}
	return out, nil
}

// SaveImages implements runtime.Images; the archive lists the refs, one per
// line (it is not a real docker archive).
func (f *Runtime) SaveImages(_ context.Context, refs ...string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("SaveImages", refs...); err != nil {
		return nil, err
	}
	for _, r := range refs {
		if _, ok := f.images[r]; !ok {
			return nil, fmt.Errorf("save image %q: %w", r, runtime.ErrNotFound)
		}
	}
	return io.NopCloser(strings.NewReader(strings.Join(refs, "\n"))), nil
}

// TagImage implements runtime.Images.
func (f *Runtime) TagImage(_ context.Context, source, target string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("TagImage", source, target); err != nil {
		return err
	}
	img, ok := f.images[source]
	if !ok {
		return fmt.Errorf("tag image %q: %w", source, runtime.ErrNotFound)
	}
	img.RepoTags = append(slices.Clone(img.RepoTags), target)
	f.images[target] = img
	return nil
}

// RemoveImage implements runtime.Images.
func (f *Runtime) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RemoveImage", ref); err != nil {
		return err
	}
	delete(f.images, ref)
	return nil
}

// PullImage implements runtime.Images: it copies the image from the
// fake's registry, tagged ref.
func (f *Runtime) PullImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("PullImage", ref); err != nil {
		return err
	}
	for prefix, err := range f.pullErrs {
		if strings.HasPrefix(ref, prefix) {
			return fmt.Errorf("pull image %q: %w", ref, err)
		}
	}
	img, ok := f.registry[ref]
	if !ok {
		return fmt.Errorf("pull image %q: manifest unknown: %w", ref, runtime.ErrNotFound)
	}
	img.RepoTags = []string{ref}
	if img.ID == "" {
		img.ID = "sha256:pulled-" + ref
	}
	f.images[ref] = img
	return nil
}

// PushImage implements runtime.Images: it copies the image into the fake's
// registry.
func (f *Runtime) PushImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("PushImage", ref); err != nil {
		return err
	}
	img, ok := f.images[ref]
	if !ok {
		return fmt.Errorf("push image %q: %w", ref, runtime.ErrNotFound)
	}
	f.registry[ref] = img
	return nil
}

// CreateNetwork implements runtime.Resources.
func (f *Runtime) CreateNetwork(_ context.Context, name string, labels map[string]string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateNetwork", name); err != nil {
		return "", err
	}
	if _, ok := f.networks[name]; ok {
		return "", fmt.Errorf("create network %q: %w", name, runtime.ErrConflict)
	}
	f.nextID++
	n := runtime.Network{ID: fmt.Sprintf("net%06d", f.nextID), Name: name, Driver: "bridge", Labels: maps.Clone(labels)}
	f.networks[name] = n
	return n.ID, nil
}

// ListNetworks implements runtime.Resources.
func (f *Runtime) ListNetworks(_ context.Context, flt runtime.Filter) ([]runtime.Network, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListNetworks", flt.Name); err != nil {
		return nil, err
	}
	var out []runtime.Network
	for _, n := range f.networks {
		if matchName(flt.Name, n.Name) && matchLabels(flt.Labels, n.Labels) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b runtime.Network) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveNetwork implements runtime.Resources.
func (f *Runtime) RemoveNetwork(_ context.Context, nameOrID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RemoveNetwork", nameOrID); err != nil {
		return err
	}
	for k, n := range f.networks {
		if k == nameOrID || n.ID == nameOrID {
			delete(f.networks, k)
		}
	}
	return nil
}

// CreateVolume implements runtime.Resources.
func (f *Runtime) CreateVolume(_ context.Context, name string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateVolume", name); err != nil {
		return err
	}
	f.volumes[name] = runtime.Volume{Name: name, Driver: "local", Labels: maps.Clone(labels)}
	return nil
}

// ListVolumes implements runtime.Resources.
func (f *Runtime) ListVolumes(_ context.Context, flt runtime.Filter) ([]runtime.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListVolumes", flt.Name); err != nil {
		return nil, err
	}
	var out []runtime.Volume
	for _, v := range f.volumes {
		if matchName(flt.Name, v.Name) && matchLabels(flt.Labels, v.Labels) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b runtime.Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveVolume implements runtime.Resources.
func (f *Runtime) RemoveVolume(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RemoveVolume", name); err != nil {
		return err
	}
	delete(f.volumes, name)
	return nil
}
