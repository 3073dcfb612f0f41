package cni

import (
	"strings"
	"testing"
)

const kubeRouterDaemonSet = `    spec:
      containers:
      - name: kube-router
        image: docker.io/cloudnativelabs/kube-router
        imagePullPolicy: Always
        args:
        - "--run-router=true"
        - "--run-firewall=true"
      initContainers:
      - name: install-cni
        image: docker.io/cloudnativelabs/kube-router:v2.0.0
        imagePullPolicy: Always
`

func TestRewriteKubeRouterManifest(t *testing.T) {
	got, err := RewriteKubeRouterManifest([]byte(kubeRouterDaemonSet), "cloudnativelabs/kube-router:v2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if n := strings.Count(s, "image: cloudnativelabs/kube-router:v2.1.0\n"); n != 2 {
		t.Errorf("want both images pinned, got %d:\n%s", n, s)
	}
	if strings.Contains(s, "Always") || strings.Count(s, "imagePullPolicy: IfNotPresent") != 2 {
		t.Errorf("pull policy not rewritten:\n%s", s)
	}
	if !strings.Contains(s, "        - \"--run-router=true\"\n        - \"--routes-sync-period=10s\"\n        - \"--run-firewall=true\"\n") {
		t.Errorf("--routes-sync-period not added after --run-router=true:\n%s", s)
	}
	if _, err := RewriteKubeRouterManifest([]byte("kind: ConfigMap\n"), "x:1"); err == nil {
		t.Error("want an error for a manifest without the image")
	}
	if _, err := RewriteKubeRouterManifest([]byte("        image: cloudnativelabs/kube-router\n"), "x:1"); err == nil {
		t.Error("want an error for a manifest without --run-router=true")
	}
}
