package waitfor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// exists is a condition: the ConfigMap ns/name exists.
func exists(c client.Client, name string) Condition {
	return func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return false, name + " does not exist"
		}
		return err == nil, "get: " + errString(err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestUntilLearnsOfAChangeFromTheWatch(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	var statuses []string
	w := Wait{Client: c, Watched: &corev1.ConfigMapList{}, ListOptions: []client.ListOption{client.InNamespace("ns")},
		Timeout: time.Minute, Resync: time.Minute, What: "config map", OnStatus: func(s string) { statuses = append(statuses, s) }}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	}()
	start := time.Now()
	if err := w.Until(context.Background(), exists(c, "a")); err != nil {
		t.Fatal(err)
	}
	// The resync is a minute: only the watch can have ended the wait.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the wait took %s: the watch did not wake it", d)
	}
	if len(statuses) == 0 || statuses[0] != "a does not exist" {
		t.Errorf("statuses = %q", statuses)
	}
}

func TestUntilTimesOutSayingWhatItSaw(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	w := Wait{Client: c, Watched: &corev1.ConfigMapList{}, Timeout: 300 * time.Millisecond, Resync: 50 * time.Millisecond, What: "config map b"}
	err := w.Until(context.Background(), exists(c, "b"))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "wait for config map b: timed out after 300ms (last seen: b does not exist)") {
		t.Errorf("Until = %v", err)
	}
}

func TestUntilReturnsWhenTheContextEnds(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	ctx, cancel := context.WithCancel(context.Background())
	w := Wait{Client: c, Watched: &corev1.ConfigMapList{}, Timeout: time.Hour, What: "config map c"}
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	err := w.Until(ctx, exists(c, "c"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("Until = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Until returned %s after the context ended", d)
	}
	// The condition is not evaluated any more after it returned: nothing
	// polls behind the caller.
	calls := 0
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_ = w.Until(ctx2, func(context.Context) (bool, string) { calls++; return false, "" })
	if calls > 2 {
		t.Errorf("condition evaluated %d times on an ended context", calls)
	}
}

func TestUntilNeedsItsInputs(t *testing.T) {
	if err := (Wait{What: "x"}).Until(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("Until without inputs = %v", err)
	}
}

// A context that ends with a cause (a spec's timeout) names it in the
// error, which still wraps the context's error.
func TestUntilNamesTheCauseOfTheContextsEnd(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	ctx, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, errors.New("spec x ran out of its timeout of 50ms"))
	defer cancel()
	w := Wait{Client: c, Watched: &corev1.ConfigMapList{}, Timeout: time.Minute, Resync: 10 * time.Millisecond, What: "a ConfigMap"}
	err := w.Until(ctx, func(context.Context) (bool, string) { return false, "none yet" })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "spec x ran out of its timeout of 50ms") || !strings.Contains(err.Error(), "none yet") {
		t.Errorf("Until = %v", err)
	}
}
