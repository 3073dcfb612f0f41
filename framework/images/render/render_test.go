package render

import (
	"strings"
	"testing"
)

const components = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: capi-controller-manager
spec:
  template:
    spec:
      containers:
      - args:
        - --diagnostics-address=${CAPI_DIAGNOSTICS_ADDRESS:=:8443}
        image: gcr.io/k8s-staging-cluster-api/cluster-api-controller:main
        imagePullPolicy: Always
        name: manager
      - image: gcr.io/k8s-staging-cluster-api/cluster-api-controller:main
        imagePullPolicy: Always
        name: second
---
apiVersion: v1
kind: ConfigMap
data:
  policy: "Always"
  note: imagePullPolicy Always stays in prose
`

func TestRewriteComponents(t *testing.T) {
	got, err := RewriteComponents([]byte(components), map[string]string{
		"cluster-api-controller": "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		"gcr.io/k8s-staging-cluster-api/cluster-api-controller:main", "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2",
		"imagePullPolicy: Always\n", "imagePullPolicy: IfNotPresent\n",
	).Replace(components)
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRewriteComponentsErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml   string
		images map[string]string
		want   string
	}{
		"unmapped image": {
			yaml:   "      - image: gcr.io/k8s-staging-cluster-api/capd-manager:main\n",
			images: map[string]string{"cluster-api-controller": "x:1"},
			want:   "no local image for gcr.io/k8s-staging-cluster-api/capd-manager:main",
		},
		"no image at all": {
			yaml:   "kind: ConfigMap\n",
			images: map[string]string{"capd-manager": "x:1"},
			want:   "no gcr.io/k8s-staging-cluster-api/<name>:main image found",
		},
		"leftover reference": {
			yaml:   "      - image: gcr.io/k8s-staging-cluster-api/capd-manager:main\n  env: gcr.io/k8s-staging-cluster-api/other:v1\n",
			images: map[string]string{"capd-manager": "x:1"},
			want:   "remains outside an image field",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := RewriteComponents([]byte(tc.yaml), tc.images)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

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
