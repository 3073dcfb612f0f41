package specs

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
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

func TestDockerBackendMetadata(t *testing.T) {
	m := &infrav1.DevMachine{}
	m.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "c1"})
	m.SetAnnotations(map[string]string{
		infrav1.LoadbalancerWeightAnnotation: "100",
		"cluster.x-k8s.io/cloned-from-name":  "c1-cp",
	})
	got := DockerBackendMetadata(m)
	if want := map[string]string{"cluster.x-k8s.io/cloned-from-name": "c1-cp"}; !maps.Equal(got.Annotations, want) {
		t.Errorf("annotations = %v, want %v", got.Annotations, want)
	}
	if !maps.Equal(got.Labels, m.GetLabels()) {
		t.Errorf("labels = %v, want %v", got.Labels, m.GetLabels())
	}
	// The object itself keeps its annotation.
	if m.GetAnnotations()[infrav1.LoadbalancerWeightAnnotation] != "100" {
		t.Errorf("the object's annotations changed: %v", m.GetAnnotations())
	}
}
