package certmanager

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// setCondition sets the condition condType in obj's status.conditions
// (cert-manager's shape is metav1.Condition's: type, status, reason,
// message, lastTransitionTime, observedGeneration) with
// meta.SetStatusCondition, which keeps lastTransitionTime when the status
// is unchanged.
func setCondition(obj *unstructured.Unstructured, condType string, status bool, reason, message string, now time.Time) {
	st := metav1.ConditionFalse
	if status {
		st = metav1.ConditionTrue
	}
	conds := conditions(obj)
	meta.SetStatusCondition(&conds, metav1.Condition{
		Type: condType, Status: st, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(now), ObservedGeneration: obj.GetGeneration(),
	})
	out := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err == nil {
			out = append(out, m)
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, out, "status", "conditions") // fails only where status is no map: the substitute writes status whole
}

// conditions returns obj's status.conditions; an entry that is not a
// condition is left out.
func conditions(obj *unstructured.Unstructured) []metav1.Condition {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []metav1.Condition
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			out = append(out, cond)
		}
	}
	return out
}

// condition returns the status, reason and message of condition condType
// of obj, with ok false when there is none.
func condition(obj *unstructured.Unstructured, condType string) (status, reason, message string, ok bool) {
	c := meta.FindStatusCondition(conditions(obj), condType)
	if c == nil {
		return "", "", "", false
	}
	return string(c.Status), c.Reason, c.Message, true
}
