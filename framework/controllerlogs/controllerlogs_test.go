package controllerlogs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// The fake clientset answers every log request with "fake logs", and the
// stream ends there, as a real one does when its container exits.
const fakeLog = "fake logs"

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-controller-manager"},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ctl"}}},
	}
}

func running(id string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "manager", ContainerID: id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func backOff(lastID string) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name:                 "manager",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: lastID, ExitCode: 1}},
	}
}

// TestWatchStreamsEachInstanceOnce is the case upstream's watcher gets
// wrong: a stream that ends while the Pod runs, then a restart with a
// back-off. Each instance's log must be in the file once.
func TestWatchStreamsEachInstanceOnce(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-controller-manager-x", UID: "u1", Labels: map[string]string{"app": "ctl"}},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "manager"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("containerd://a")}},
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "unrelated", UID: "u2", Labels: map[string]string{"app": "other"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager"}}}}
	cs := fake.NewClientset(pod, other)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Watch(ctx, Input{ClientSet: cs, Deployment: deployment(), LogPath: dir, Interval: 5 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "capi-controller-manager", "capi-controller-manager-x", "manager.log")
	read := func() string { b, _ := os.ReadFile(file); return string(b) }
	// eventually waits for the file to hold want, then checks that it still
	// does for 300 ms.
	eventually := func(step, want string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return read() == want, nil
		}); err != nil {
			t.Fatalf("%s: the log file holds %q, want %q", step, read(), want)
		}
		// 60 intervals, in which upstream's watcher would append again.
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 300*time.Millisecond, true, func(context.Context) (bool, error) {
			return read() != want, nil
		}); err == nil {
			t.Fatalf("%s: the log file grew to %q, want %q", step, read(), want)
		}
	}
	update := func(s corev1.ContainerStatus) {
		t.Helper()
		p := pod.DeepCopy()
		p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
		if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	eventually("instance a, its stream ended while it runs", fakeLog)
	update(backOff("containerd://a"))
	eventually("instance a exited, back-off", fakeLog)
	update(running("containerd://b"))
	// "fake logs" has no newline at its end: the line that names the next
	// instance starts a line of its own.
	second := fakeLog + "\n==== capd-e2e: container manager restarted; its next instance (containerd://b) follows ====\n" + fakeLog
	eventually("instance b", second)

	var meta map[string]string
	b, err := os.ReadFile(filepath.Join(dir, "capi-controller-manager", "capi-controller-manager-x", "manager-log-metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"job": "capi-system/capi-controller-manager", "namespace": "capi-system", "app": "capi-controller-manager",
		"pod": "capi-controller-manager-x", "container": "manager", "node_name": "node-1", "stream": "stderr"}
	for k, v := range want {
		if meta[k] != v {
			t.Errorf("metadata %s = %q, want %q (%s)", k, meta[k], v, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "capi-controller-manager", "unrelated")); !os.IsNotExist(err) {
		t.Errorf("a Pod outside the Deployment's selector was watched (stat: %v)", err)
	}
}

func TestInstance(t *testing.T) {
	pod := func(phase corev1.PodPhase, init bool, s corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if init {
			p.Spec.InitContainers = []corev1.Container{{Name: s.Name}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{s}
		} else {
			p.Spec.Containers = []corev1.Container{{Name: s.Name}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
		}
		return p
	}
	exited := func(id string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "manager", ContainerID: id, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: id, ExitCode: code}}}
	}
	for _, tc := range []struct {
		name          string
		pod           *corev1.Pod
		id            string
		running, done bool
	}{
		{"running", pod(corev1.PodRunning, false, running("c://1")), "c://1", true, false},
		{"back-off: the last instance", pod(corev1.PodRunning, false, backOff("c://1")), "c://1", false, false},
		{"not started", pod(corev1.PodPending, false, corev1.ContainerStatus{Name: "manager"}), "", false, false},
		{"exited, will restart", pod(corev1.PodRunning, false, exited("c://2", 1)), "c://2", false, false},
		{"init container completed", pod(corev1.PodRunning, true, exited("c://3", 0)), "c://3", false, true},
		{"init container failed, will retry", pod(corev1.PodPending, true, exited("c://3", 1)), "c://3", false, false},
		{"pod failed", pod(corev1.PodFailed, false, exited("c://4", 1)), "c://4", false, true},
		{"no status yet", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, run, done := instance(tc.pod, "manager")
			if id != tc.id || run != tc.running || done != tc.done {
				t.Errorf("instance = (%q, running %v, done %v), want (%q, %v, %v)", id, run, done, tc.id, tc.running, tc.done)
			}
		})
	}
}

func TestWatchRejectsBadInput(t *testing.T) {
	noSelector := deployment()
	noSelector.Spec.Selector = nil
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"no clientset", Input{Deployment: deployment(), LogPath: "x"}, "ClientSet is nil"},
		{"no deployment", Input{ClientSet: fake.NewClientset(), LogPath: "x"}, "Deployment is nil"},
		{"no log path", Input{ClientSet: fake.NewClientset(), Deployment: deployment()}, "LogPath is empty (Deployment capi-system/capi-controller-manager)"},
		{"no selector", Input{ClientSet: fake.NewClientset(), Deployment: noSelector, LogPath: "x"}, "capi-system/capi-controller-manager has no selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Watch(context.Background(), tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Watch error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
