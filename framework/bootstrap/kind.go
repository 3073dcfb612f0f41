// Package bootstrap sets up the management cluster the E2E runs against: a
// kind cluster from our own node image (kind as a Go library), the images
// the providers need loaded into every node through our runtime, and the
// clusterctl configuration for a cert-manager we provide ourselves.
//
// Functions here return errors instead of failing a Ginkgo spec, so they can
// be used from a suite, a test or a command alike. They never pull images.
package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kind "sigs.k8s.io/kind/pkg/cluster"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// KindOptions configures a kind cluster.
type KindOptions struct {
	// Name of the cluster. Required.
	Name string
	// NodeImage, e.g. "kindest/node:v1.36.3". Required: there is no default,
	// since kind's default would be pulled from a registry.
	NodeImage string
	// Workers is the number of worker nodes besides the control plane.
	Workers int
	// MountDockerSocket mounts the engine's socket (the unix socket Runtime
	// talks to: /var/run/docker.sock for Docker, /run/podman/podman.sock
	// for a rootful Podman service) at /var/run/docker.sock in the
	// control-plane node, where CAPD looks for it to create machines.
	MountDockerSocket bool
	// KubeconfigPath is where the kubeconfig is written. If empty, a file in
	// os.TempDir().
	KubeconfigPath string
	// WaitForReady bounds the wait for the control plane to be Ready. If
	// zero, 5m.
	WaitForReady time.Duration
	// NoWait makes CreateKind return once kind has set the cluster up
	// (kubeadm init done, the CNI and storage applied), without waiting
	// for the control-plane node to be Ready: the caller overlaps that
	// wait with its next steps and checks what it needs later (a
	// Deployment that becomes Available implies a Ready node).
	// WaitForReady still bounds how long a cancelled create is awaited.
	NoWait bool
	// Images are streamed into every node's containerd (see LoadImages)
	// while kind sets the cluster up: as soon as every node's containerd
	// answers, which is long before kubeadm init ends. If that fails (a
	// containerd restarting under the import), they are loaded again once
	// kind is done. CreateKind returns when both are done. Each must be
	// in the engine.
	Images []string
	// LogFolder receives the nodes' logs (collected through Runtime) when
	// creation fails. If empty, none are collected.
	LogFolder string
	// Runtime is used to check the node image, load images, list and
	// remove nodes and collect their logs. Required.
	Runtime Engine
	// EnableOwnerReferencesPermissionEnforcement turns on the admission
	// plugin upstream enables to catch RBAC errors with blockOwnerDeletion.
	EnableOwnerReferencesPermissionEnforcement bool
	// DualStack makes the cluster dual-stack (kind's ipFamily "dual"): its
	// Pods and Services get an IPv4 and an IPv6 address, from
	// DualStackPodSubnets and DualStackServiceSubnets, so that its Pods
	// reach IPv6 addresses (an IPv6-only workload cluster's API server).
	// The node image's default CNI is IPv4-only, so CNIManifest is then
	// required: a dual-stack CNI for those ranges.
	DualStack bool
	// CNIManifest, if set, replaces the node image's default CNI: kind
	// installs none, and CreateKind creates these objects (kubectl create
	// on the control-plane node) once kind has set the cluster up, before
	// it waits for the node to be Ready.
	CNIManifest []byte
}

// The ranges of a DualStack cluster, IPv4 first (kind's defaults for
// ipFamily "dual", set explicitly so that a CNI can be rendered for them).
var (
	DualStackPodSubnets     = []string{"10.244.0.0/16", "fd00:10:244::/56"}
	DualStackServiceSubnets = []string{"10.96.0.0/16", "fd00:10:96::/112"}
)

// KindCluster is a created kind cluster.
type KindCluster struct {
	Name           string
	KubeconfigPath string
	provider       *kind.Provider
	rt             Engine
}

// Engine is what a kind cluster needs of the container engine, besides
// what kind's own provider does.
type Engine interface {
	ImageLoader
	logs.Engine
	RemoveContainer(ctx context.Context, nameOrID string) error
	Info(ctx context.Context) (runtime.EngineInfo, error)
}

var _ Engine = runtime.Runtime(nil)

func (o KindOptions) validate() error {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("KindOptions.Name: required"))
	}
	if o.NodeImage == "" {
		errs = append(errs, errors.New("KindOptions.NodeImage: required"))
	}
	if o.Runtime == nil {
		errs = append(errs, errors.New("KindOptions.Runtime: required"))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("KindOptions.Workers: %d is negative", o.Workers))
	}
	if o.DualStack && len(o.CNIManifest) == 0 {
		errs = append(errs, errors.New("KindOptions.CNIManifest: required with DualStack (the node image's default CNI is IPv4-only)"))
	}
	return errors.Join(errs...)
}

// CreateKind creates a kind cluster. The node image must be in the engine:
// it is checked first, so a missing image is reported by name instead of as
// a failed pull. On failure the nodes' logs go to LogFolder and the cluster
// is deleted.
func CreateKind(ctx context.Context, o KindOptions) (*KindCluster, error) {
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("create kind cluster: %w", err)
	}
	if _, err := o.Runtime.InspectImage(ctx, o.NodeImage); err != nil {
		return nil, fmt.Errorf("create kind cluster %q: node image %q is not in the engine (run make images): %w", o.Name, o.NodeImage, err)
	}
	if o.KubeconfigPath == "" {
		f, err := os.CreateTemp("", "capd-e2e-kubeconfig-"+o.Name+"-*")
		if err != nil {
			return nil, fmt.Errorf("create kind cluster %q: %w", o.Name, err)
		}
		_ = f.Close() // empty: only its name is wanted, for kind to write
		o.KubeconfigPath = f.Name()
	}
	if o.WaitForReady == 0 {
		o.WaitForReady = 5 * time.Minute
	}

	engine, err := o.Runtime.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("create kind cluster %q: %w", o.Name, err)
	}
	providerOpt, err := kindProvider(engine, exec.LookPath)
	if err != nil {
		return nil, fmt.Errorf("create kind cluster %q: %w", o.Name, err)
	}
	cfg := &v1alpha4.Cluster{Nodes: []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}}}
	if o.MountDockerSocket {
		socket, err := engine.SocketPath()
		if err != nil {
			return nil, fmt.Errorf("create kind cluster %q: mount the engine's socket: %w", o.Name, err)
		}
		cfg.Nodes[0].ExtraMounts = append(cfg.Nodes[0].ExtraMounts, v1alpha4.Mount{HostPath: socket, ContainerPath: "/var/run/docker.sock"})
	}
	for range o.Workers {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole})
	}
	if o.EnableOwnerReferencesPermissionEnforcement {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches,
			"kind: ClusterConfiguration\napiServer:\n  extraArgs:\n    enable-admission-plugins: OwnerReferencesPermissionEnforcement\n")
	}
	if o.DualStack {
		cfg.Networking.IPFamily = v1alpha4.DualStackFamily
		cfg.Networking.PodSubnet = strings.Join(DualStackPodSubnets, ",")
		cfg.Networking.ServiceSubnet = strings.Join(DualStackServiceSubnets, ",")
	}
	cfg.Networking.DisableDefaultCNI = len(o.CNIManifest) > 0
	v1alpha4.SetDefaultsCluster(cfg)

	// kind's providers run the docker or podman CLI themselves; that is
	// kind's business, everything the harness does goes through o.Runtime.
	provider := kind.NewProvider(providerOpt, kind.ProviderWithLogger(kindcmd.NewLogger()))
	k := &KindCluster{Name: o.Name, KubeconfigPath: o.KubeconfigPath, provider: provider, rt: o.Runtime}

	created := make(chan error, 1)
	wait := o.WaitForReady
	if o.NoWait || len(o.CNIManifest) > 0 {
		// kind: no wait. Without its default CNI no node becomes Ready
		// before CreateKind installs CNIManifest; it waits itself then.
		wait = 0
	}
	go func() {
		created <- provider.Create(o.Name,
			kind.CreateWithV1Alpha4Config(cfg),
			kind.CreateWithNodeImage(o.NodeImage),
			kind.CreateWithKubeconfigPath(o.KubeconfigPath),
			kind.CreateWithRetain(true), // keep the nodes to collect their logs
			kind.CreateWithWaitForReady(wait),
			kind.CreateWithDisplayUsage(false),
			kind.CreateWithDisplaySalutation(false),
		)
	}()
	var loaded chan error
	loadCtx, cancelLoad := context.WithCancel(ctx)
	defer cancelLoad()
	if len(o.Images) > 0 {
		loaded = make(chan error, 1)
		go func() { loaded <- k.loadWhileCreating(loadCtx, 1+o.Workers, o.Images) }()
	}
	select {
	case err = <-created:
	case <-ctx.Done():
		// kind's library takes no context: wait for it to give up, bounded
		// by its own WaitForReady, then clean up.
		err = fmt.Errorf("%w (kind create was still running)", ctx.Err())
		select {
		case <-created:
		case <-time.After(o.WaitForReady + time.Minute):
		}
	}
	if loaded != nil {
		if err != nil {
			cancelLoad()
			<-loaded
		} else if lerr := <-loaded; lerr != nil {
			// Loaded too early (or not at all): once more, on the
			// finished cluster.
			if nodes, nerr := k.Nodes(ctx); nerr != nil {
				err = nerr
			} else if err = LoadImages(ctx, o.Runtime, nodes, o.Images); err != nil {
				err = fmt.Errorf("%w (loading while kind created the cluster: %v)", err, lerr)
			}
		}
	}
	if err == nil && len(o.CNIManifest) > 0 {
		err = k.installCNI(ctx, o.CNIManifest, !o.NoWait, o.WaitForReady)
	}
	if err != nil {
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		if o.LogFolder != "" {
			if lerr := k.CollectLogs(cleanupCtx, o.LogFolder); lerr != nil {
				err = fmt.Errorf("%w (and collecting node logs: %v)", err, lerr)
			}
		}
		if derr := k.Delete(cleanupCtx); derr != nil {
			err = fmt.Errorf("%w (and deleting it: %v)", err, derr)
		}
		if ctx.Err() != nil {
			if serr := k.settle(cleanupCtx); serr != nil {
				err = fmt.Errorf("%w (and removing its late containers: %v)", err, serr)
			}
		}
		return nil, fmt.Errorf("create kind cluster %q from %s: %w%s", o.Name, o.NodeImage, err, commandOutputTail(err))
	}
	return k, nil
}

// outputTailLines is how much of a failed command's output an error
// quotes.
const outputTailLines = 15

// commandOutputTail is the end of the output of the command kind ran that
// failed (kubeadm init, for one), as text on lines of its own after the
// error, or "" if err holds none. kind keeps it only as the bytes of its
// RunError, which the error's message leaves out and a failure report
// prints as a list of numbers; the reason is in its last lines.
func commandOutputTail(err error) string {
	var run *kindexec.RunError
	if !errors.As(err, &run) || len(bytes.TrimSpace(run.Output)) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(run.Output), "\n"), "\n")
	if len(lines) > outputTailLines {
		lines = lines[len(lines)-outputTailLines:]
	}
	return "\nthe command's last lines of output:\n" + strings.Join(lines, "\n")
}

// kindProvider picks kind's provider for the engine Runtime talks to: its
// Podman provider for Podman's service, its Docker provider otherwise.
// Both shell out to their CLI, which must reach the same engine: the
// docker CLI follows DOCKER_HOST like our client; the podman CLI talks to
// the local Podman (rootful: the store the rootful service serves), so a
// remote Podman cannot host the management cluster.
//
// Why kind's provider and not the node created through our runtime: kind's
// create steps (config, kubeadm init, CNI, storage class, kubeconfig) live
// in its internal packages and run through its provider's node type, which
// cannot be replaced from outside; creating the node ourselves would mean
// rewriting and maintaining those steps for each kind release. The cost of
// this choice: the management cluster's node container is made by a second
// client (the CLI), which must be installed beside the engine.
func kindProvider(engine runtime.EngineInfo, lookPath func(string) (string, error)) (kind.ProviderOption, error) {
	if !engine.Podman {
		return kind.ProviderWithDocker(), nil
	}
	if _, err := lookPath("podman"); err != nil {
		return nil, fmt.Errorf("the engine at %s is %s: kind's Podman provider needs the podman CLI on this host: %w", engine.Endpoint, engine.Product(), err)
	}
	if engine.Rootless {
		return nil, fmt.Errorf("the engine at %s is a rootless %s: the E2E needs rootful Podman (CAPD's machines are privileged containers that nest containers; see docs/podman.md)", engine.Endpoint, engine.Product())
	}
	return kind.ProviderWithPodman(), nil
}

// settle removes the cluster's containers that appear after kind gave up.
// An interrupt reaches kind's docker CLI too, and a `docker run` killed
// with its request in flight leaves a container the engine creates a
// moment later. It checks every 500 ms and returns after 3 s without one,
// or fails after 20 s.
func (k *KindCluster) settle(ctx context.Context) error {
	start := time.Now()
	quiet := start
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		cs, err := k.rt.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: k.Name}})
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			quiet = time.Now()
			if err := k.rt.RemoveContainer(ctx, c.ID); err != nil {
				return false, err
			}
		}
		return len(cs) == 0 && time.Since(quiet) >= 3*time.Second, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("containers of kind cluster %q kept appearing for %s", k.Name, time.Since(start).Round(time.Second))
	}
	return err
}

// loadWhileCreating waits until the cluster has n node containers whose
// containerd answers, checking every 200 ms, then loads images into them.
func (k *KindCluster) loadWhileCreating(ctx context.Context, n int, images []string) error {
	var nodes []string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		found, err := k.Nodes(ctx)
		if err != nil || len(found) != n || !k.containerdAnswers(ctx, found) {
			return false, nil
		}
		nodes = found
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("load images while creating kind cluster %q: %w", k.Name, err)
	}
	return LoadImages(ctx, k.rt, nodes, images)
}

func (k *KindCluster) containerdAnswers(ctx context.Context, nodes []string) bool {
	for _, n := range nodes {
		res, err := k.rt.Exec(ctx, n, runtime.ExecOptions{Cmd: []string{"ctr", "--namespace=k8s.io", "version"}, Stdout: io.Discard, Stderr: io.Discard})
		if err != nil || res.ExitCode != 0 {
			return false
		}
	}
	return true
}

// Nodes returns the names of the cluster's node containers.
func (k *KindCluster) Nodes(ctx context.Context) ([]string, error) {
	return Nodes(ctx, k.rt, k.Name)
}

// NodeLister is what Nodes needs of the engine.
type NodeLister interface {
	ListContainers(ctx context.Context, f runtime.Filter) ([]runtime.Container, error)
}

// Nodes returns the names of the node containers of kind cluster name, a
// running one too (make iterate loads images into `make up`'s): the
// containers with its cluster label, an external load balancer aside.
func Nodes(ctx context.Context, rt NodeLister, name string) ([]string, error) {
	cs, err := rt.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: name}})
	if err != nil {
		return nil, fmt.Errorf("list nodes of kind cluster %q: %w", name, err)
	}
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Labels[runtime.LabelRole] != runtime.RoleExternalLoadBalancer {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("kind cluster %q has no node containers", name)
	}
	return names, nil
}

// CollectLogs collects every node's logs into dir/<node>/ with our log
// collector, concurrently.
func (k *KindCluster) CollectLogs(ctx context.Context, dir string) error {
	nodes, err := k.Nodes(ctx)
	if err != nil {
		return err
	}
	targets := make([]logs.Target, 0, len(nodes))
	for _, n := range nodes {
		targets = append(targets, logs.Target{Container: n, Dir: filepath.Join(dir, n)})
	}
	c := &logs.Collector{Runtime: k.rt}
	return c.CollectMachines(ctx, targets)
}

// Delete deletes the cluster and its kubeconfig file.
func (k *KindCluster) Delete(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- k.provider.Delete(k.Name, k.KubeconfigPath) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("delete kind cluster %q: %w", k.Name, err)
		}
	case <-ctx.Done():
		return fmt.Errorf("delete kind cluster %q: %w", k.Name, ctx.Err())
	}
	if err := os.Remove(k.KubeconfigPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete kubeconfig of kind cluster %q: %w", k.Name, err)
	}
	return nil
}

// installCNI creates manifest's objects with the control-plane node's
// kubectl (kind's way to install its default CNI) and, with wait, waits
// until every node is Ready, bounded by timeout.
func (k *KindCluster) installCNI(ctx context.Context, manifest []byte, wait bool, timeout time.Duration) error {
	node := k.Name + "-control-plane"
	kubectl := []string{"kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"}
	var stderr bytes.Buffer
	res, err := k.rt.Exec(ctx, node, runtime.ExecOptions{
		Cmd:   append(slices.Clone(kubectl), "create", "-f", "-"),
		Stdin: bytes.NewReader(manifest), Stderr: &stderr,
	})
	if err == nil && res.ExitCode != 0 {
		err = &runtime.ExitError{Container: node, Cmd: []string{"kubectl", "create", "-f", "-"}, ExitCode: res.ExitCode, Stderr: stderr.Bytes()}
	}
	if err != nil {
		return fmt.Errorf("install the CNI: %w", err)
	}
	if !wait {
		return nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	if _, err := runtime.Output(waitCtx, k.rt, node, append(kubectl, "wait", "--for=condition=Ready", "nodes", "--all", "--timeout="+timeout.String())...); err != nil {
		return fmt.Errorf("wait for the nodes to be Ready with the CNI installed: %w", err)
	}
	return nil
}
