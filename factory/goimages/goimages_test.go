package goimages

import (
	"testing"

	"github.com/capd-e2e/capd-e2e/factory/plan"
)

func TestSharedBuild(t *testing.T) {
	for _, tc := range []struct {
		step plan.Step
		want string
	}{
		{plan.Step{Kind: plan.KindKubeComponent, Inputs: map[string]string{plan.InputModule: "k8s.io/kubernetes", plan.InputVersion: "v1.36.3"}}, "k8s.io/kubernetes@v1.36.3"},
		{plan.Step{Kind: plan.KindNode, Inputs: map[string]string{plan.InputVersion: "v1.36.3"}}, "k8s.io/kubernetes@v1.36.3"},
		{plan.Step{Kind: plan.KindNode, Inputs: map[string]string{plan.InputModule: "example.com/fork", plan.InputVersion: "v1.36.3"}}, "example.com/fork@v1.36.3"},
		{plan.Step{Kind: plan.KindClusterAPI, Inputs: map[string]string{plan.InputModule: "sigs.k8s.io/cluster-api", plan.InputVersion: "v1.14.2"}}, "sigs.k8s.io/cluster-api@v1.14.2"},
		{plan.Step{Kind: plan.KindClusterAPI, Dir: "/src/cluster-api/test", Inputs: map[string]string{plan.InputModule: "sigs.k8s.io/cluster-api/test", plan.InputVersion: "v1.14.99"}}, "/src/cluster-api/test"},
		{plan.Step{Kind: plan.KindEtcd, Inputs: map[string]string{plan.InputModule: "go.etcd.io/etcd/server/v3", plan.InputVersion: "v3.6.8"}}, ""},
	} {
		if got := SharedBuild(tc.step); got != tc.want {
			t.Errorf("SharedBuild(%s %v) = %q, want %q", tc.step.Kind, tc.step.Inputs, got, tc.want)
		}
	}
}
