package specs

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestWorkloadUnsettled(t *testing.T) {
	node := func(name string, ready corev1.ConditionStatus) client.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	proxy := func(name string, ready corev1.ConditionStatus) client.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": "kube-proxy"}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "coredns-1", Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": "kube-dns"}}}
	for name, tc := range map[string]struct {
		objs []client.Object
		want string
	}{
		"settled": {objs: []client.Object{node("cp-1", "True"), node("cp-2", "True"), proxy("kube-proxy-a", "True"), proxy("kube-proxy-b", "True"), other}},
		"a Node not Ready": {objs: []client.Object{node("cp-1", "True"), node("cp-2", "Unknown"), proxy("kube-proxy-a", "True"), proxy("kube-proxy-b", "True")},
			want: "Node cp-2 not Ready"},
		"a Node without its kube-proxy": {objs: []client.Object{node("cp-1", "True"), node("cp-2", "True"), proxy("kube-proxy-a", "True"), other},
			want: "1 kube-proxy Pods for 2 Nodes"},
		"a kube-proxy not Ready": {objs: []client.Object{node("cp-1", "True"), proxy("kube-proxy-a", "False")},
			want: "kube-proxy Pod kube-proxy-a not Ready"},
	} {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := corev1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			if got := workloadUnsettled(context.Background(), c); got != tc.want {
				t.Errorf("workloadUnsettled = %q, want %q", got, tc.want)
			}
		})
	}
}
