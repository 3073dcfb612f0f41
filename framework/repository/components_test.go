package repository

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
