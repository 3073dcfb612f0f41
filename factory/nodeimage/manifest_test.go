package nodeimage

import (
	"slices"
	"testing"
)

func TestAddKubeletArgs(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"kind's file, no newline": {
			"KUBELET_EXTRA_ARGS=--runtime-cgroups=/system.slice/containerd.service",
			"KUBELET_EXTRA_ARGS=--runtime-cgroups=/system.slice/containerd.service --fail-cgroupv1=false\n",
		},
		"replaces the same flag": {
			"# comment\nKUBELET_EXTRA_ARGS=\"--fail-cgroupv1=true --v=2\"\nOTHER=1\n",
			"# comment\nKUBELET_EXTRA_ARGS=--v=2 --fail-cgroupv1=false\nOTHER=1\n",
		},
		"empty file":  {"", "KUBELET_EXTRA_ARGS=--fail-cgroupv1=false\n"},
		"no variable": {"OTHER=1", "OTHER=1\nKUBELET_EXTRA_ARGS=--fail-cgroupv1=false\n"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := AddKubeletArgs([]byte(tc.in), "--fail-cgroupv1=false")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := AddKubeletArgs(nil, "--a=b c"); err == nil {
		t.Error("a flag with a space was accepted")
	}
	if _, err := AddKubeletArgs([]byte("KUBELET_EXTRA_ARGS=\nKUBELET_EXTRA_ARGS=\n"), "--a"); err == nil {
		t.Error("a file setting the variable twice was accepted")
	}
}

func TestSandboxImage(t *testing.T) {
	got, err := SandboxImage([]string{"registry.k8s.io/etcd:3.6.8-0", "registry.k8s.io/pause:3.10.2", "example.com/pause-not:1"})
	if err != nil || got != "registry.k8s.io/pause:3.10.2" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := SandboxImage([]string{"registry.k8s.io/etcd:3.6.8-0"}); err == nil {
		t.Error("no error without a pause image")
	}
	if _, err := SandboxImage([]string{"a.io/pause:1", "b.io/pause:2"}); err == nil {
		t.Error("no error with two pause images")
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"cloudnativelabs/kube-router:v2.1.0":      "docker.io/cloudnativelabs/kube-router:v2.1.0",
		"busybox:1":                               "docker.io/library/busybox:1",
		"registry.k8s.io/coredns/coredns:v1.14.2": "registry.k8s.io/coredns/coredns:v1.14.2",
		"localhost/x:1":                           "localhost/x:1",
		"host:5000/x:1":                           "host:5000/x:1",
	} {
		if got := NormalizeImage(in); got != want {
			t.Errorf("NormalizeImage(%q) = %q, want %q", in, got, want)
		}
	}
	missing := MissingImages([]string{"cloudnativelabs/kube-router:v2.1.0", "registry.k8s.io/pause:3.10.2"},
		[]string{"docker.io/cloudnativelabs/kube-router:v2.1.0", "registry.k8s.io/etcd:3.6.8-0"})
	if !slices.Equal(missing, []string{"registry.k8s.io/pause:3.10.2"}) {
		t.Errorf("MissingImages = %q", missing)
	}
}
