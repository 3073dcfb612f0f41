package specs

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestClustersIn(t *testing.T) {
	yaml := []byte(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: kcp-remediation-abc123
  namespace: ns-1
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevCluster
metadata:
  name: kcp-remediation-abc123
  namespace: ns-1
---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: old-api
  namespace: ns-2
---
apiVersion: example.com/v1
kind: Cluster
metadata:
  name: not-cluster-api
  namespace: ns-1
`)
	got, err := clustersIn(yaml)
	if err != nil {
		t.Fatal(err)
	}
	want := []types.NamespacedName{{Namespace: "ns-1", Name: "kcp-remediation-abc123"}, {Namespace: "ns-2", Name: "old-api"}}
	if !slices.Equal(got, want) {
		t.Errorf("clustersIn = %v, want %v", got, want)
	}
	if _, err := clustersIn([]byte("kind: [")); err == nil {
		t.Error("clustersIn of broken YAML: no error")
	}
}
