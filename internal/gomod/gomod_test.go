package gomod

import "testing"

func TestTransientProxyError(t *testing.T) {
	for msg, want := range map[string]bool{
		"reading https://proxy.golang.org/github.com/coredns/coredns/@v/v1.14.6.info: 503 Service Unavailable\n\tserver response: upstream connect error or disconnect/reset before headers. reset reason: connection timeout": true,
		"dial tcp 142.250.1.1:443: i/o timeout":                                        true,
		"reading https://proxy.golang.org/example.com/x/@v/v9.9.9.info: 404 Not Found": false,
		"invalid version: unknown revision v9.9.9":                                     false,
	} {
		if got := transientProxyError.MatchString(msg); got != want {
			t.Errorf("transient(%q) = %t, want %t", msg, got, want)
		}
	}
}

func TestExecName(t *testing.T) {
	for in, want := range map[string]string{
		"k8s.io/kubernetes/cmd/kube-apiserver":                      "kube-apiserver",
		"go.etcd.io/etcd/server/v3":                                 "server",
		"github.com/coredns/coredns":                                "coredns",
		"sigs.k8s.io/cluster-api/test/infrastructure/docker":        "docker",
		"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router": "kube-router",
	} {
		if got := ExecName(in); got != want {
			t.Errorf("ExecName(%s) = %s, want %s", in, got, want)
		}
	}
}
