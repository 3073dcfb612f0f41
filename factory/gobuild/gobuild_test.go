package gobuild

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
)

const kubernetesGoMod = `module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/spf13/cobra v1.10.0
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
	github.com/old/thing => github.com/new/thing v1.2.3
)
`

func TestWrapperGoModKubernetes(t *testing.T) {
	got, err := wrapperGoMod([]sourceModule{{Mod: module.Version{Path: "k8s.io/kubernetes", Version: "v1.36.3"}, GoMod: []byte(kubernetesGoMod)}},
		KubernetesStagingVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `module capd-e2e.local/gobuild

go 1.26.0

godebug default=go1.26

require k8s.io/kubernetes v1.36.3

replace github.com/old/thing => github.com/new/thing v1.2.3

replace k8s.io/api => k8s.io/api v0.36.3

replace k8s.io/client-go => k8s.io/client-go v0.36.3
`
	if string(got) != want {
		t.Errorf("go.mod:\n%s\nwant:\n%s", got, want)
	}
}

const etcdServerGoMod = `module go.etcd.io/etcd/server/v3

go 1.24.0

toolchain go1.24.13

require (
	go.etcd.io/etcd/api/v3 v3.6.8
	go.etcd.io/etcd/client/v3 v3.6.8
)

replace (
	go.etcd.io/etcd/api/v3 => ../api
	go.etcd.io/etcd/client/v3 => ../client/v3
)

replace go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY
`

const etcdctlGoMod = `module go.etcd.io/etcd/etcdctl/v3

go 1.25.0

require go.etcd.io/etcd/api/v3 v3.6.8

replace go.etcd.io/etcd/api/v3 => ../api
`

func TestWrapperGoModEtcdSiblings(t *testing.T) {
	got, err := wrapperGoMod([]sourceModule{
		{Mod: module.Version{Path: "go.etcd.io/etcd/server/v3", Version: "v3.6.8"}, GoMod: []byte(etcdServerGoMod)},
		{Mod: module.Version{Path: "go.etcd.io/etcd/etcdctl/v3", Version: "v3.6.8"}, GoMod: []byte(etcdctlGoMod)},
	}, nil, map[string]string{"example.com/pin": "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		"go 1.25.0\n", // the highest go line
		"go.etcd.io/etcd/server/v3 v3.6.8",
		"go.etcd.io/etcd/etcdctl/v3 v3.6.8",
		"go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 v3.6.8",
		"go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 v3.6.8",
		"example.com/pin => example.com/pin v0.1.0",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"toolchain", "FORBIDDEN", "../"} {
		if strings.Contains(s, bad) {
			t.Errorf("go.mod contains %q:\n%s", bad, s)
		}
	}
}

func TestWrapperGoModConflict(t *testing.T) {
	a := "module a\n\ngo 1.22\n\nreplace x.io/y => x.io/y v1.0.0\n"
	b := "module b\n\ngo 1.22\n\nreplace x.io/y => x.io/y v1.1.0\n"
	_, err := wrapperGoMod([]sourceModule{
		{Mod: module.Version{Path: "a", Version: "v1.0.0"}, GoMod: []byte(a)},
		{Mod: module.Version{Path: "b", Version: "v1.0.0"}, GoMod: []byte(b)},
	}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "x.io/y") {
		t.Fatalf("want a conflict naming x.io/y, got %v", err)
	}
	// An explicit replace settles it.
	if _, err := wrapperGoMod([]sourceModule{
		{Mod: module.Version{Path: "a", Version: "v1.0.0"}, GoMod: []byte(a)},
	}, nil, map[string]string{"x.io/y": "v1.2.0"}); err != nil {
		t.Fatal(err)
	}
}

func TestKubernetesStagingVersion(t *testing.T) {
	for in, want := range map[string]string{"v1.36.3": "v0.36.3", "v1.37.2": "v0.37.2", "v2.0.0": "v2.0.0"} {
		if got := KubernetesStagingVersion("k8s.io/api", in); got != want {
			t.Errorf("KubernetesStagingVersion(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestTargetValidate(t *testing.T) {
	tg := Target{
		Modules:  []module.Version{{Path: "sigs.k8s.io/cluster-api", Version: "v1.14.2"}},
		Packages: []string{"sigs.k8s.io/cluster-api/bootstrap/kubeadm", "sigs.k8s.io/cluster-api/controlplane/kubeadm"},
	}
	if err := tg.validate(); err == nil || !strings.Contains(err.Error(), `"kubeadm"`) {
		t.Errorf("want a name clash error, got %v", err)
	}
	tg.Packages = tg.Packages[:1]
	if err := tg.validate(); err != nil {
		t.Error(err)
	}
}

func TestTargetArgsAndHash(t *testing.T) {
	tg := Target{
		Modules:  []module.Version{{Path: "k8s.io/kubernetes", Version: "v1.36.3"}},
		Packages: []string{"k8s.io/kubernetes/cmd/kubeadm"},
		Tags:     []string{"a", "b"},
		LDFlags:  []string{"-X 'p.v=1'"},
	}
	args := tg.args("/out/")
	want := []string{"build", "-mod=mod", "-trimpath", "-buildvcs=false", "-gcflags", "all=-dwarf=false", "-ldflags", "-s -w -X 'p.v=1'", "-tags", "a,b", "-o", "/out/", "k8s.io/kubernetes/cmd/kubeadm"}
	if !slices.Equal(args, want) {
		t.Errorf("args = %q, want %q", args, want)
	}
	env := tg.env()
	if !slices.Contains(env, "CGO_ENABLED=0") || !slices.Contains(env, "GOTOOLCHAIN=local") || !slices.Contains(env, "GOWORK=off") {
		t.Errorf("env lacks a setting: %q", env)
	}
	h1 := tg.outputHash("go1.26.8", []byte("x"))
	tg.LDFlags = []string{"-X 'p.v=2'"}
	if h2 := tg.outputHash("go1.26.8", []byte("x")); h1 == h2 {
		t.Error("output hash ignores ldflags")
	}
	if h3 := tg.outputHash("go1.26.9", []byte("x")); h3 == tg.outputHash("go1.26.8", []byte("x")) {
		t.Error("output hash ignores the toolchain")
	}

	// Harness drops -trimpath, the one flag that differs from the suite's.
	plain := tg.outputHash("go1.26.8", []byte("x"))
	tg.Harness = true
	if args := tg.args("/out/"); slices.Contains(args, "-trimpath") || !slices.Contains(args, "-gcflags") {
		t.Errorf("harness args = %q, want -gcflags and no -trimpath", args)
	}
	if tg.outputHash("go1.26.8", []byte("x")) == plain {
		t.Error("output hash ignores Harness")
	}
}

func TestTargetTestBinary(t *testing.T) {
	tg := Target{
		Modules:  []module.Version{{Path: "k8s.io/kubernetes", Version: "v1.37.2"}},
		Packages: []string{"k8s.io/kubernetes/test/e2e"},
		Tags:     []string{"notest"},
		Test:     true,
	}
	if err := tg.validate(); err != nil {
		t.Fatal(err)
	}
	args := tg.args("/out/")
	want := []string{"test", "-c", "-mod=mod", "-trimpath", "-buildvcs=false", "-gcflags", "all=-dwarf=false", "-ldflags", "-s -w", "-tags", "notest", "-o", "/out/e2e.test", "k8s.io/kubernetes/test/e2e"}
	if !slices.Equal(args, want) {
		t.Errorf("args = %q, want %q", args, want)
	}
	if list := tg.listArgs(); !slices.Contains(list, "-test") {
		t.Errorf("list args = %q: without -test, the test's own imports are not downloaded", list)
	}
	if got := tg.binaryName(tg.Packages[0]); got != "e2e.test" {
		t.Errorf("binary = %q, want e2e.test", got)
	}
	test := tg.outputHash("go1.26.8", []byte("x"))
	tg.Test = false
	if tg.outputHash("go1.26.8", []byte("x")) == test {
		t.Error("output hash ignores Test")
	}
	tg.Test, tg.Packages = true, []string{"k8s.io/kubernetes/test/e2e", "k8s.io/kubernetes/test/e2e_node"}
	if err := tg.validate(); err == nil || !strings.Contains(err.Error(), "one package") {
		t.Errorf("two packages in a test target: got %v, want an error", err)
	}
}

func TestLDFlags(t *testing.T) {
	src := Source{Version: "v1.36.3", Commit: "0123456789abcdef", Time: time.Date(2026, 7, 22, 18, 7, 38, 0, time.UTC)}
	got := KubernetesLDFlags(src)
	for _, want := range []string{
		"-X 'k8s.io/component-base/version.gitVersion=v1.36.3'",
		"-X 'k8s.io/component-base/version.gitMajor=1'",
		"-X 'k8s.io/component-base/version.gitMinor=36'",
		"-X 'k8s.io/component-base/version.buildDate=2026-07-22T18:07:38Z'",
		"-X 'k8s.io/client-go/pkg/version.gitVersion=v1.36.3'",
		"-X 'k8s.io/client-go/pkg/version.gitCommit=0123456789abcdef'",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("KubernetesLDFlags lacks %s: %q", want, got)
		}
	}
	// Unknown commit and date keep the packages' defaults.
	for _, f := range KubernetesLDFlags(Source{Version: "v1.37.2"}) {
		if strings.Contains(f, "gitCommit") || strings.Contains(f, "buildDate") {
			t.Errorf("unexpected %s", f)
		}
	}
	if got := ClusterAPILDFlags(Source{Version: "v1.14.2"}); !slices.Contains(got, "-X 'sigs.k8s.io/cluster-api/version.gitMinor=14'") {
		t.Errorf("ClusterAPILDFlags: %q", got)
	}
	if got := EtcdLDFlags(src); !slices.Equal(got, []string{"-X 'go.etcd.io/etcd/api/v3/version.GitSHA=012345678'"}) {
		t.Errorf("EtcdLDFlags: %q", got)
	}
	if got := CoreDNSLDFlags(Source{}); len(got) != 0 {
		t.Errorf("CoreDNSLDFlags without commit: %q", got)
	}
	if got := KubeRouterLDFlags("github.com/cloudnativelabs/kube-router/v2", Source{Version: "v2.1.0"}); !slices.Equal(got, []string{"-X 'github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v2.1.0'"}) {
		t.Errorf("KubeRouterLDFlags: %q", got)
	}
}

func TestPruneOutputs(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	for _, d := range []string{"out/old", "out/new", "logs"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "logs", "old.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-30 * 24 * time.Hour)
	for _, p := range []string{filepath.Join(out, "old"), filepath.Join(root, "logs", "old.log")} {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	pruneOutputs(out, OutputTTL)
	if _, err := os.Stat(filepath.Join(out, "old")); !os.IsNotExist(err) {
		t.Errorf("old output kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "logs", "old.log")); !os.IsNotExist(err) {
		t.Errorf("old log kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "new")); err != nil {
		t.Errorf("recent output removed: %v", err)
	}
}

// TestLogEnv checks that a build's log names the settings the build ran
// with (make bench-gobuild replays them) and nothing else of the
// environment.
func TestLogEnv(t *testing.T) {
	t.Setenv("GOGC", "400")
	t.Setenv("CGO_ENABLED", "1") // overridden by the target
	t.Setenv("CAPD_E2E_SECRET_LOOKING", "x")
	env := Target{GOARCH: "arm64"}.env()
	got := logEnv(env)
	want := []string{"GOGC=400", "CGO_ENABLED=0", "GOOS=linux", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=", "GOARCH=arm64"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("logEnv = %q, want %q", got, want)
	}
}
