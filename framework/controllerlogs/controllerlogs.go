// Package controllerlogs streams the logs of a management cluster's
// controllers (the Pods of a provider's Deployment) into an artifacts folder
// while a suite runs, in the layout of upstream's
// framework.WatchDeploymentLogsByName:
// <LogPath>/<Deployment>/<Pod>/<container>.log, with
// <container>-log-metadata.json beside it.
//
// We wrote our own because upstream's watcher (cluster-api test v1.14.2)
// duplicates a log whenever its follow stream ends while the Pod is still
// Running: it opens the stream again from the start and appends, every 2 s.
// A controller container that restarts (a failed liveness probe on a loaded
// machine, a crash) ends the stream, and until the kubelet starts the next
// instance it serves the dead one's whole log, so that log is appended once
// per 2 s of back-off. In one `make bench-scale` run (three quick-starts at
// once, 2 cores) KCP's manager.log held 6714 lines of which 934 were
// distinct.
//
// Here each container instance (container ID) is streamed once. A stream
// that ends while the same instance still runs is opened again and the
// bytes already written are skipped, so a broken connection loses nothing
// and repeats nothing. When the instance changes, the new one is streamed
// from its start, after a line that names it. Two limits: if the kubelet
// rotates the instance's log file between two streams, the skip is counted
// against the new file; and a restart between the status read and the
// stream's start is attributed to the old instance.
package controllerlogs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// DefaultInterval is how often a container that is not streaming is looked
// at again, as upstream's watcher does.
const DefaultInterval = 2 * time.Second

// Input names a Deployment whose Pods' container logs are streamed.
type Input struct {
	ClientSet  kubernetes.Interface
	Deployment *appsv1.Deployment
	// LogPath is the folder the Deployment's folder goes in.
	LogPath string
	// Interval: see DefaultInterval (used when zero).
	Interval time.Duration
	// Logf, if set, is told of each container watched and of errors, which
	// never stop the watch.
	Logf func(format string, args ...any)
}

// Watch streams the logs of every container (init containers included) of
// the Deployment's Pods, those there now and those created later, until ctx
// ends. It returns once the Pod informer has synced; an error means nothing
// is being watched.
func Watch(ctx context.Context, in Input) error {
	switch {
	case in.ClientSet == nil:
		return errors.New("controllerlogs: Input.ClientSet is nil")
	case in.Deployment == nil:
		return errors.New("controllerlogs: Input.Deployment is nil")
	case in.LogPath == "":
		return fmt.Errorf("controllerlogs: Input.LogPath is empty (Deployment %s/%s)", in.Deployment.Namespace, in.Deployment.Name)
	case in.Deployment.Spec.Selector == nil:
		return fmt.Errorf("controllerlogs: Deployment %s/%s has no selector", in.Deployment.Namespace, in.Deployment.Name)
	}
	selector, err := metav1.LabelSelectorAsSelector(in.Deployment.Spec.Selector)
	if err != nil {
		return fmt.Errorf("controllerlogs: Deployment %s/%s: selector: %w", in.Deployment.Namespace, in.Deployment.Name, err)
	}
	if in.Interval <= 0 {
		in.Interval = DefaultInterval
	}
	if in.Logf == nil {
		in.Logf = func(string, ...any) {}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(in.ClientSet, 0,
		informers.WithNamespace(in.Deployment.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector.String() }))
	informer := factory.Core().V1().Pods().Informer()
	w := &watcher{in: in, ctx: ctx, selector: selector, started: map[types.UID]bool{}}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.pod,
		UpdateFunc: func(_, obj any) { w.pod(obj) },
	}); err != nil {
		return fmt.Errorf("controllerlogs: Deployment %s/%s: %w", in.Deployment.Namespace, in.Deployment.Name, err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("controllerlogs: Deployment %s/%s: %v informer did not sync: %w", in.Deployment.Namespace, in.Deployment.Name, typ, context.Cause(ctx))
		}
	}
	return nil
}

type watcher struct {
	in       Input
	ctx      context.Context //nolint:containedctx // the watch's lifetime, for the informer's callbacks
	selector labels.Selector

	mu      sync.Mutex
	started map[types.UID]bool
}

// pod starts one follower per container of a Pod it has not seen before.
func (w *watcher) pod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Namespace != w.in.Deployment.Namespace || !w.selector.Matches(labels.Set(pod.Labels)) {
		return
	}
	w.mu.Lock()
	seen := w.started[pod.UID]
	w.started[pod.UID] = true
	w.mu.Unlock()
	if seen {
		return
	}
	for _, c := range pod.Spec.InitContainers {
		go w.follow(pod, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		go w.follow(pod, c.Name)
	}
}

// fail tells Logf of an error in following a container; the watch goes on.
func (w *watcher) fail(p *corev1.Pod, container string, err error) {
	w.in.Logf("controller logs of %s/%s, container %s: %v", p.Namespace, p.Name, container, err)
}

// metadata is the file upstream writes beside each log, with its keys.
type metadata struct {
	Job       string `json:"job"`
	Namespace string `json:"namespace"`
	App       string `json:"app"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	NodeName  string `json:"node_name"`
	Stream    string `json:"stream"`
}

// follow streams one container's instances into its file until the Pod is
// gone, the container is done for good, or the watch ends.
func (w *watcher) follow(pod *corev1.Pod, container string) {
	dep := w.in.Deployment
	dir := filepath.Join(w.in.LogPath, dep.Name, pod.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		w.fail(pod, container, err)
		return
	}
	meta, _ := json.Marshal(metadata{
		Job: dep.Namespace + "/" + dep.Name, Namespace: dep.Namespace, App: dep.Name,
		Pod: pod.Name, Container: container, NodeName: pod.Spec.NodeName, Stream: "stderr",
	})
	if err := os.WriteFile(filepath.Join(dir, container+"-log-metadata.json"), meta, 0o600); err != nil {
		w.fail(pod, container, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, container+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		w.fail(pod, container, err)
		return
	}
	defer f.Close()
	w.in.Logf("streaming the logs of controller %s/%s, pod %s, container %s", dep.Namespace, dep.Name, pod.Name, container)

	out := &lastByteWriter{w: f, last: '\n'}
	var current string // the instance in the file
	var written int64  // its bytes in the file
	var failing bool   // the last Get failed (logged once until one succeeds)
	for {
		p, err := w.in.ClientSet.CoreV1().Pods(pod.Namespace).Get(w.ctx, pod.Name, metav1.GetOptions{})
		switch {
		case w.ctx.Err() != nil:
			return
		case apierrors.IsNotFound(err), err == nil && p.UID != pod.UID:
			return
		case err != nil:
			if !failing {
				w.fail(pod, container, fmt.Errorf("%w (retrying)", err))
			}
			failing = true
		default:
			failing = false
			id, running, done := instance(p, container)
			switch {
			case id != "" && id != current:
				if current != "" {
					header := fmt.Sprintf("==== capd-e2e: container %s restarted; its next instance (%s) follows ====\n", container, id)
					if out.last != '\n' {
						header = "\n" + header
					}
					if _, err := io.WriteString(out, header); err != nil {
						w.fail(pod, container, err)
						return
					}
				}
				current, written = id, 0
				written += w.stream(p, container, out, 0)
			case id != "" && running:
				// The same instance, still running: its stream ended early.
				written += w.stream(p, container, out, written)
			case done:
				return
			}
		}
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(w.in.Interval):
		}
	}
}

// instance tells which container instance the kubelet serves the log of
// (the running or last terminated one), whether it runs, and whether the
// container is done for good.
func instance(p *corev1.Pod, container string) (id string, running, done bool) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		done = true
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if s.Name != container {
			continue
		}
		switch {
		case s.State.Running != nil:
			return s.ContainerID, true, done
		case s.State.Terminated != nil:
			// An init container that completed does not run again.
			return s.ContainerID, false, done || isInit(p, container) && s.State.Terminated.ExitCode == 0
		case s.LastTerminationState.Terminated != nil:
			return s.LastTerminationState.Terminated.ContainerID, false, done
		}
		return "", false, done
	}
	return "", false, done
}

func isInit(p *corev1.Pod, container string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == container {
			return true
		}
	}
	return false
}

// lastByteWriter remembers the last byte written, so that a line after a
// stream cut mid-line starts on a line of its own.
type lastByteWriter struct {
	w    io.Writer
	last byte
}

func (l *lastByteWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.last = p[n-1]
	}
	return n, err
}

// stream copies a container's current log, following it, into f, after
// skipping the first skip bytes (those already in f). It returns the bytes
// written.
func (w *watcher) stream(p *corev1.Pod, container string, f io.Writer, skip int64) int64 {
	rc, err := w.in.ClientSet.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(w.ctx)
	if err != nil {
		if w.ctx.Err() == nil {
			w.fail(p, container, err)
		}
		return 0
	}
	defer rc.Close()
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, rc, skip); err != nil {
			return 0
		}
	}
	n, err := io.Copy(f, rc)
	if err != nil && w.ctx.Err() == nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		w.fail(p, container, err)
	}
	return n
}
