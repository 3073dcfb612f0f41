package certmanager

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// setCondition sets the condition condType in obj's status.conditions
// (cert-manager's shape: type, status, reason, message, lastTransitionTime,
// observedGeneration), keeping lastTransitionTime when the status is
// unchanged.
func setCondition(obj *unstructured.Unstructured, condType string, status bool, reason, message string, now time.Time) {
	st := "False"
	if status {
		st = "True"
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	cond := map[string]any{
		"type":               condType,
		"status":             st,
		"reason":             reason,
		"message":            message,
		"lastTransitionTime": now.UTC().Format(time.RFC3339),
		"observedGeneration": obj.GetGeneration(),
	}
	for i, c := range conds {
		old, ok := c.(map[string]any)
		if !ok || old["type"] != condType {
			continue
		}
		if old["status"] == st {
			if t, ok := old["lastTransitionTime"]; ok {
				cond["lastTransitionTime"] = t
			}
		}
		conds[i] = cond
		_ = unstructured.SetNestedSlice(obj.Object, conds, "status", "conditions")
		return
	}
	conds = append(conds, cond)
	_ = unstructured.SetNestedSlice(obj.Object, conds, "status", "conditions")
}

// condition returns the status, reason and message of condition condType
// of obj, with ok false when there is none.
func condition(obj *unstructured.Unstructured, condType string) (status, reason, message string, ok bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, isMap := c.(map[string]any)
		if !isMap || m["type"] != condType {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		message, _ = m["message"].(string)
		return status, reason, message, true
	}
	return "", "", "", false
}
