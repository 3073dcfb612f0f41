package goimages

import (
	"os"
	"path/filepath"
	"strings"
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
		{plan.Step{Kind: plan.KindConformance, Inputs: map[string]string{plan.InputModule: "k8s.io/kubernetes", plan.InputVersion: "v1.37.2"}}, "k8s.io/kubernetes@v1.37.2"},
		{plan.Step{Kind: plan.KindTestImage, Inputs: map[string]string{plan.InputName: "agnhost", plan.InputModule: "k8s.io/kubernetes", plan.InputVersion: "v1.37.2"}}, "k8s.io/kubernetes@v1.37.2"},
		// Not compiled: free to build beside the Kubernetes build.
		{plan.Step{Kind: plan.KindTestImage, Inputs: map[string]string{plan.InputName: "nginx", plan.InputModule: "k8s.io/kubernetes", plan.InputVersion: "v1.37.2"}}, ""},
	} {
		if got := SharedBuild(tc.step); got != tc.want {
			t.Errorf("SharedBuild(%s %v) = %q, want %q", tc.step.Kind, tc.step.Inputs, got, tc.want)
		}
	}
}

func TestCheckManifest(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "test", "utils", "image", "manifest.go")
	if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `	configs[AgnhostPrev] = Config{list.PromoterE2eRegistry, "agnhost", "2.55"}
	configs[Agnhost] = Config{list.PromoterE2eRegistry, "agnhost", "2.66.1"}
	configs[BusyBox] = Config{list.PromoterE2eRegistry, "busybox", "1.37.0-2"}
`
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, tag, wantErr string }{
		{"agnhost", "2.66.1", ""},
		{"agnhost", "2.55", ""},
		{"agnhost", "2.66", "names agnhost only at 2.55, 2.66.1"},
		{"kitten", "1.8", `names no image "kitten"`},
	} {
		err := checkManifest(dir, tc.name, tc.tag)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("checkManifest(%s:%s) = %v, want %q", tc.name, tc.tag, err, tc.wantErr)
		}
	}
}
