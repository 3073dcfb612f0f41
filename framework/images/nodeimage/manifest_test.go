package nodeimage

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// A manifest shaped like kube-router's daemonset/generic-kuberouter.yaml.
const cniManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-router-cfg
  namespace: kube-system
data:
  cni-conf.json: |
    {"cniVersion": "0.3.0", "name": "mynet"}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-router
  namespace: kube-system
spec:
  template:
    spec:
      containers:
      - name: kube-router
        image: docker.io/cloudnativelabs/kube-router
        imagePullPolicy: Always
        args: ["--run-router=true"]
      initContainers:
      - name: install-cni
        image: docker.io/cloudnativelabs/kube-router
        imagePullPolicy: Always
        command:
        - /bin/sh
        - -c
        - set -e -x;
          echo multi-line plain scalar;
---

---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-router
  namespace: kube-system
`

func TestRewriteCNIManifest(t *testing.T) {
	out, err := RewriteCNIManifest([]byte(cniManifest), "cloudnativelabs/kube-router:v2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "---\n")
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want 3 (empty ones dropped):\n%s", len(docs), out)
	}
	var ds struct {
		Kind string
		Spec struct {
			Template struct {
				Spec struct {
					Containers, InitContainers []struct {
						Name, Image, ImagePullPolicy string
						Args, Command                []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &ds); err != nil {
		t.Fatal(err)
	}
	pod := ds.Spec.Template.Spec
	all := append(pod.Containers, pod.InitContainers...)
	if len(all) != 2 {
		t.Fatalf("got %d containers, want 2", len(all))
	}
	for _, c := range all {
		if c.Image != "cloudnativelabs/kube-router:v2.1.0" || c.ImagePullPolicy != "IfNotPresent" {
			t.Errorf("container %s: image %q, pull policy %q", c.Name, c.Image, c.ImagePullPolicy)
		}
	}
	if !slices.Equal(pod.Containers[0].Args, []string{"--run-router=true"}) {
		t.Errorf("args changed: %q", pod.Containers[0].Args)
	}
	if got := pod.InitContainers[0].Command[2]; got != "set -e -x; echo multi-line plain scalar;" {
		t.Errorf("init command changed: %q", got)
	}
	if !strings.Contains(docs[0], "kind: ConfigMap") || !strings.Contains(docs[0], `{"cniVersion": "0.3.0", "name": "mynet"}`) {
		t.Errorf("ConfigMap changed:\n%s", docs[0])
	}
}

func TestRewriteCNIManifestErrors(t *testing.T) {
	if _, err := RewriteCNIManifest([]byte("apiVersion: v1\nkind: ConfigMap\n"), "x:1"); err == nil {
		t.Error("a manifest without a DaemonSet was accepted")
	}
	if _, err := RewriteCNIManifest([]byte(cniManifest), ""); err == nil {
		t.Error("an empty image was accepted")
	}
	if _, err := RewriteCNIManifest([]byte("kind: DaemonSet\nspec: {}\n"), "x:1"); err == nil {
		t.Error("a DaemonSet without a pod template was accepted")
	}
}

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
