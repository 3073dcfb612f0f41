package suite

import (
	"slices"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestWithoutCAPDDeprecations(t *testing.T) {
	var got []string
	base := funcr.New(func(prefix, args string) { got = append(got, prefix+" "+args) }, funcr.Options{})
	log := withoutCAPDDeprecations(base)
	log.Info("infrastructure.cluster.x-k8s.io/v1beta2 DockerMachine is deprecated")
	log.WithName("graph").Info("infrastructure.cluster.x-k8s.io/v1beta1 DockerClusterTemplate is deprecated")
	log.Info("infrastructure.cluster.x-k8s.io/v1beta2 DevMachine is deprecated")
	log.WithValues("k", "v").Info("cluster.x-k8s.io/v1beta1 Cluster is deprecated")
	log.Error(nil, "infrastructure.cluster.x-k8s.io/v1beta2 DockerMachine is deprecated")
	want := []string{
		` "level"=0 "msg"="infrastructure.cluster.x-k8s.io/v1beta2 DevMachine is deprecated"`,
		` "level"=0 "msg"="cluster.x-k8s.io/v1beta1 Cluster is deprecated" "k"="v"`,
		` "msg"="infrastructure.cluster.x-k8s.io/v1beta2 DockerMachine is deprecated" "error"=null`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("logged:\n%q\nwant (CAPD's Docker* deprecations dropped, everything else kept):\n%q", got, want)
	}
}
