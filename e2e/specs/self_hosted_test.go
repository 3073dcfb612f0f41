package specs

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestMovedClusterReconciled(t *testing.T) {
	t.Parallel()
	reconciled := func() *clusterv1.Cluster {
		c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 3}}
		c.Spec.Paused = ptr.To(false)
		c.Status.ObservedGeneration = 3
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1.PausedCondition, Status: metav1.ConditionFalse}}
		c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "manager"}}
		return c
	}
	for name, tc := range map[string]struct {
		mutate func(*clusterv1.Cluster)
		want   string // "" for done
	}{
		"reconciled":         {mutate: func(*clusterv1.Cluster) {}},
		"paused unset":       {mutate: func(c *clusterv1.Cluster) { c.Spec.Paused = nil }},
		"still paused":       {mutate: func(c *clusterv1.Cluster) { c.Spec.Paused = ptr.To(true) }, want: "still paused"},
		"not yet reconciled": {mutate: func(c *clusterv1.Cluster) { c.Status.ObservedGeneration = 2 }, want: "observed generation 2 of 3"},
		"reports Paused":     {mutate: func(c *clusterv1.Cluster) { c.Status.Conditions[0].Status = metav1.ConditionTrue }, want: "reports Paused"},
		"clusterctl owns some": {mutate: func(c *clusterv1.Cluster) {
			c.ManagedFields = append(c.ManagedFields, metav1.ManagedFieldsEntry{Manager: "clusterctl"})
		}, want: "clusterctl still owns"},
	} {
		t.Run(name, func(t *testing.T) {
			c := reconciled()
			tc.mutate(c)
			done, status := movedClusterReconciled(c)
			if done != (tc.want == "") || !strings.Contains(status, tc.want) {
				t.Errorf("movedClusterReconciled = %v, %q; want done=%v and a status containing %q", done, status, tc.want == "", tc.want)
			}
		})
	}
}
