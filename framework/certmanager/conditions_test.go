package certmanager

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSetConditionKeepsTheTransitionTimeWhileTheStatusHolds(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"generation": int64(3)}}}
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	lastTransition := func() string {
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		if len(conds) != 1 {
			t.Fatalf("conditions = %v, want one", conds)
		}
		s, _ := conds[0].(map[string]any)["lastTransitionTime"].(string)
		return s
	}

	setCondition(obj, ConditionReady, false, ReasonPending, "waiting", t0)
	setCondition(obj, ConditionReady, false, ReasonPending, "still waiting", t0.Add(time.Minute))
	if got := lastTransition(); got != "2026-12-03T10:00:00Z" {
		t.Errorf("same status: lastTransitionTime %s, want the first one", got)
	}
	if status, reason, message, ok := condition(obj, ConditionReady); !ok || status != "False" || reason != ReasonPending || message != "still waiting" {
		t.Errorf("condition = %s %s %q %t", status, reason, message, ok)
	}
	setCondition(obj, ConditionReady, true, ReasonReady, "ok", t0.Add(2*time.Minute))
	if got := lastTransition(); got != "2026-12-03T10:02:00Z" {
		t.Errorf("status changed: lastTransitionTime %s, want the new one", got)
	}
	if _, _, _, ok := condition(obj, "Other"); ok {
		t.Error("a condition that was never set was found")
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if g := conds[0].(map[string]any)["observedGeneration"]; g != int64(3) {
		t.Errorf("observedGeneration = %v (%T), want 3", g, g)
	}
}
