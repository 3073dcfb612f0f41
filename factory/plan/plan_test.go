package plan

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capd-e2e/capd-e2e/factory/buildspec"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

const repoConfig = "../../config/e2e.yaml"

// fixed toolchain and arch, so the tests do not depend on the machine.
// testOpts hash every local Go package (the harness's own
// cloud-controller-manager is one) as "h-<package>".
var testOpts = Options{GoVersion: "go1.26.8", Arch: "amd64", SourceHashes: fixedHashes}

func fixedHashes(_ string, pkgs, _ []string) (map[string]SourceInfo, error) {
	out := map[string]SourceInfo{}
	for _, p := range pkgs {
		out[p] = SourceInfo{ImportPath: p, Hash: "h-" + p}
	}
	return out, nil
}

func loadConfig(t *testing.T) *buildspec.Build {
	t.Helper()
	c, err := config.Load(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildspec.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// validate checks both parts of a build section a test changed.
func validate(b *buildspec.Build) error {
	return errors.Join(b.Config.Validate(), b.Validate())
}

func newPlan(t *testing.T, c *buildspec.Build, opts Options) *Plan {
	t.Helper()
	p, err := New(c, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// engineWith returns a fake engine holding every image of p, labelled as
// p would build it.
func engineWith(p *Plan) *fake.Runtime {
	rt := fake.New()
	for _, s := range p.Steps() {
		rt.AddImage(runtime.Image{ID: "sha256:" + s.Hash, RepoTags: []string{s.Image}, Labels: s.Labels()})
	}
	return rt
}

func toBuild(t *testing.T, p *Plan, images ImageInspector, rebuild ...string) []string {
	t.Helper()
	ds, err := p.Decide(context.Background(), images, rebuild...)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	var ids []string
	for _, d := range ds {
		if d.Build {
			ids = append(ids, d.Step.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestNewFromRepoConfig(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	var ids []string
	pos := map[string]int{}
	for i, s := range p.Steps() {
		ids = append(ids, s.ID)
		pos[s.ID] = i
		if len(s.Hash) != 64 {
			t.Errorf("step %s: hash %q", s.ID, s.Hash)
		}
		for _, d := range s.Deps {
			if pos[d] >= i || d == s.ID {
				t.Errorf("step %s at %d comes before its dependency %s", s.ID, i, d)
			}
		}
	}
	want := []string{
		"cert-manager-substitute", "cluster-api/core", "cluster-api/docker", "cluster-api/kubeadm-bootstrap",
		"cluster-api/kubeadm-control-plane", "cluster-api/test-extension",
		"cluster-api/v1.13.4/core", "cluster-api/v1.13.4/docker", "cluster-api/v1.13.4/kubeadm-bootstrap", "cluster-api/v1.13.4/kubeadm-control-plane",
		"conformance/v1.37.2", "coredns/v1.12.1", "coredns/v1.13.1", "coredns/v1.14.2", "coredns/v1.14.6",
		"e2e-test-image/agnhost:2.55", "e2e-test-image/agnhost:2.66.1", "e2e-test-image/busybox:1.37.0-2",
		"e2e-test-image/glibc-dns-testing:2.1.1", "e2e-test-image/kitten:1.8", "e2e-test-image/nautilus:1.8",
		"e2e-test-image/nginx:1.27.0-2", "e2e-test-image/nonewprivs:1.4", "e2e-test-image/nonroot:1.5",
		"e2e-test-image/sample-apiserver:1.29.2", "etcd/v3.6.5", "etcd/v3.6.6", "etcd/v3.6.8", "etcd/v3.7.0",
		"go-image/capd-e2e/cloud-controller-manager:v0.36.3",
		"haproxy", "kind-base", "kube-apiserver/v1.34.4", "kube-apiserver/v1.35.4", "kube-apiserver/v1.36.3", "kube-apiserver/v1.37.2",
		"kube-controller-manager/v1.34.4", "kube-controller-manager/v1.35.4", "kube-controller-manager/v1.36.3", "kube-controller-manager/v1.37.2", "kube-proxy/v1.34.4", "kube-proxy/v1.35.4", "kube-proxy/v1.36.3",
		"kube-proxy/v1.37.2", "kube-router", "kube-scheduler/v1.34.4", "kube-scheduler/v1.35.4", "kube-scheduler/v1.36.3", "kube-scheduler/v1.37.2",
		"node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2", "pause/3.10.1", "pause/3.10.2", "rootfs/e2e-tools", "rootfs/haproxy", "rootfs/net", "rootfs/node",
	}
	sorted := slices.Sorted(slices.Values(ids))
	if !slices.Equal(sorted, want) {
		t.Errorf("steps = %v\nwant    %v", sorted, want)
	}

	node, _ := p.Step("node/v1.36.3")
	for _, d := range []string{"kind-base", "kube-router", "etcd/v3.6.8", "coredns/v1.14.2", "coredns/v1.14.6", "pause/3.10.2", "kube-proxy/v1.36.3"} {
		if !slices.Contains(node.Deps, d) {
			t.Errorf("node/v1.36.3 deps %v lack %s", node.Deps, d)
		}
	}
	if slices.Contains(node.Deps, "etcd/v3.7.0") {
		t.Error("node/v1.36.3 preloads etcd v3.7.0, which the config does not ask for")
	}
	if got, want := node.Inputs[InputPreload], "cloudnativelabs/kube-router:v2.1.0 registry.k8s.io/coredns/coredns:v1.14.2 registry.k8s.io/coredns/coredns:v1.14.6 registry.k8s.io/etcd:3.6.8-0 registry.k8s.io/kube-apiserver:v1.36.3 registry.k8s.io/kube-controller-manager:v1.36.3 registry.k8s.io/kube-proxy:v1.36.3 registry.k8s.io/kube-proxy:v1.37.2 registry.k8s.io/kube-scheduler:v1.36.3 registry.k8s.io/pause:3.10.2"; got != want {
		t.Errorf("node/v1.36.3 preload = %q\nwant %q", got, want)
	}
	if node.Inputs[InputFrom] != "capd-e2e/kind-base:v0.33.0" || node.Image != "kindest/node:v1.36.3" {
		t.Errorf("node/v1.36.3 = %+v", node)
	}
	proxy, _ := p.Step("kube-proxy/v1.36.3")
	if !slices.Equal(proxy.Deps, []string{"rootfs/net"}) || proxy.Inputs[InputFrom] != "capd-e2e/debian-net:trixie" {
		t.Errorf("kube-proxy/v1.36.3 = %+v", proxy)
	}
	capd, _ := p.Step(IDCAPD)
	if capd.Inputs[InputPackage] != "sigs.k8s.io/cluster-api/test/infrastructure/docker" || capd.Inputs[InputVersion] != "v1.14.2" {
		t.Errorf("%s = %+v", IDCAPD, capd)
	}
	conf, _ := p.Step("conformance/v1.37.2")
	if conf.Image != "registry.k8s.io/conformance:v1.37.2" || !slices.Equal(conf.Deps, []string{"rootfs/e2e-tools"}) || conf.Inputs[InputVersion] != "v1.37.2" {
		t.Errorf("conformance/v1.37.2 = %+v", conf)
	}
	kitten, _ := p.Step("e2e-test-image/kitten:1.8")
	// kitten is on Alpine's minirootfs, from the module proxy: on no image.
	if kitten.Image != "registry.k8s.io/e2e-test-images/kitten:1.8" || kitten.Inputs[InputAlpine] != "github.com/alpinelinux/docker-alpine@v0.0.0-20260614000913-398ff0c866d2" ||
		len(kitten.Deps) != 0 || kitten.Inputs[InputFrom] != "" || kitten.Inputs[InputVersion] != "v1.37.2" {
		t.Errorf("kitten = %+v", kitten)
	}
	// busybox is compiled from BusyBox's release, on no rootfs.
	if busybox, _ := p.Step("e2e-test-image/busybox:1.37.0-2"); len(busybox.Deps) != 0 || busybox.Inputs[InputFrom] != "" ||
		busybox.Inputs[InputSource] != "1.37.0" || busybox.Inputs[InputMirror] != "http://deb.debian.org/debian" {
		t.Errorf("busybox = %+v", busybox)
	}
	if _, ok := p.Step("nope"); ok {
		t.Error(`Step("nope") found a step`)
	}
}

func TestHashIsStable(t *testing.T) {
	c := loadConfig(t)
	a := newPlan(t, c, testOpts).Steps()
	b := newPlan(t, c, testOpts).Steps()
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Hash != b[i].Hash {
			t.Fatalf("two plans of one config differ at %d: %s %s vs %s %s", i, a[i].ID, a[i].Hash, b[i].ID, b[i].Hash)
		}
	}
	// Package order does not matter to debootstrap, so not to the hash.
	slices.Reverse(c.Debian.Rootfs[0].Packages)
	if got := toBuild(t, newPlan(t, c, testOpts), engineWith(newPlan(t, loadConfig(t), testOpts))); len(got) != 0 {
		t.Errorf("reordering packages rebuilds %v", got)
	}
}

// With the debian runtime the module versions are unused: bumping them
// must rebuild nothing.
func TestDecideDebianRuntimeIgnoresModuleVersions(t *testing.T) {
	debian := func() *buildspec.Build {
		c := loadConfig(t)
		c.ContainerRuntime.Source = buildspec.RuntimeFromDebian
		node := &c.Debian.Rootfs[0]
		node.Packages = append(node.Packages, "containerd", "runc", "containernetworking-plugins")
		if err := validate(c); err != nil {
			t.Fatalf("the debian runtime config is invalid: %v", err)
		}
		return c
	}
	engine := engineWith(newPlan(t, debian(), testOpts))
	c := debian()
	c.ContainerRuntime.Containerd.Version = "v2.3.5"
	c.ContainerRuntime.Runc.Version = "v1.4.4"
	if got := toBuild(t, newPlan(t, c, testOpts), engine); len(got) != 0 {
		t.Errorf("unused runtime module versions rebuild %v", got)
	}
	c.ContainerRuntime.Source = buildspec.RuntimeFromModules
	c.Debian.Rootfs[0].Packages = c.Debian.Rootfs[0].Packages[:len(c.Debian.Rootfs[0].Packages)-3]
	if got := toBuild(t, newPlan(t, c, testOpts), engine); !slices.Contains(got, "kind-base") {
		t.Errorf("switching to the modules runtime rebuilds %v, want kind-base among them", got)
	}
}

func TestDecide(t *testing.T) {
	base := newPlan(t, loadConfig(t), testOpts)
	engine := engineWith(base)

	tests := []struct {
		name   string
		change func(c *buildspec.Build)
		opts   *Options
		want   []string
	}{
		{name: "nothing changed", change: func(*buildspec.Build) {}, want: nil},
		{
			name: "etcd bump for v1.37.2",
			change: func(c *buildspec.Build) {
				k := &c.Kubernetes[1]
				k.Etcd.Version, k.Etcd.Image = "v3.7.1", "registry.k8s.io/etcd:3.7.1-0"
				c.Config.Variables[config.VarEtcdVersionUpgradeTo] = "3.7.1-0"
			},
			want: []string{"etcd/v3.7.1", "node/v1.37.2"},
		},
		{
			name:   "CoreDNS bump for v1.37.2 reaches the v1.36.3 node that preloads it",
			change: func(c *buildspec.Build) { c.Kubernetes[1].CoreDNS.Path = "example.com/fork/coredns" },
			want:   []string{"coredns/v1.14.6", "node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2"},
		},
		{
			name: "a package added to the net rootfs",
			change: func(c *buildspec.Build) {
				c.Debian.Rootfs[1].Packages = append(c.Debian.Rootfs[1].Packages, "tcpdump")
			},
			want: []string{"kube-proxy/v1.34.4", "kube-proxy/v1.35.4", "kube-proxy/v1.36.3", "kube-proxy/v1.37.2", "kube-router", "node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2", "rootfs/net"},
		},
		{
			name: "Debian mirror",
			change: func(c *buildspec.Build) {
				c.Debian.Mirror = "http://snapshot.debian.org/archive/debian/20261130T000000Z"
			},
			want: []string{"conformance/v1.37.2", "e2e-test-image/agnhost:2.55", "e2e-test-image/agnhost:2.66.1",
				"e2e-test-image/busybox:1.37.0-2", "e2e-test-image/glibc-dns-testing:2.1.1",
				"e2e-test-image/nginx:1.27.0-2", "e2e-test-image/nonewprivs:1.4", "e2e-test-image/nonroot:1.5",
				"e2e-test-image/sample-apiserver:1.29.2", "haproxy", "kind-base", "kube-proxy/v1.34.4", "kube-proxy/v1.35.4", "kube-proxy/v1.36.3", "kube-proxy/v1.37.2", "kube-router",
				"node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2", "rootfs/e2e-tools", "rootfs/haproxy", "rootfs/net", "rootfs/node"},
		},
		{
			name: "Alpine release",
			change: func(c *buildspec.Build) {
				c.Kubernetes[1].Conformance.Alpine.Version = "v0.0.0-20260622060631-4ad948cca27e"
			},
			want: []string{"e2e-test-image/kitten:1.8", "e2e-test-image/nautilus:1.8"},
		},
		{
			name:   "containerd bump with the modules runtime",
			change: func(c *buildspec.Build) { c.ContainerRuntime.Containerd.Version = "v2.3.5" },
			want:   []string{"kind-base", "node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2"},
		},
		{
			name:   "crictl",
			change: func(c *buildspec.Build) { c.Crictl.Version = "v1.36.1" },
			want:   []string{"kind-base", "node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2"},
		},
		{
			name: "Cluster API version",
			change: func(c *buildspec.Build) {
				c.ClusterAPI.Version = "v1.14.3"
				for i := range c.Config.Providers {
					c.Config.Providers[i].Versions[0].Name = "v1.14.3"
				}
			},
			want: []string{"cluster-api/core", "cluster-api/docker", "cluster-api/kubeadm-bootstrap", "cluster-api/kubeadm-control-plane", "cluster-api/test-extension"},
		},
		{
			name:   "haproxy image name",
			change: func(c *buildspec.Build) { c.LoadBalancer.Image = "kindest/haproxy:v20240000-local" },
			want:   []string{"haproxy"},
		},
		{
			name:   "Go toolchain rebuilds every Go-built image",
			change: func(*buildspec.Build) {},
			opts:   &Options{GoVersion: "go1.26.9", Arch: "amd64", SourceHashes: fixedHashes},
			want: []string{"cert-manager-substitute", "cluster-api/core", "cluster-api/docker", "cluster-api/kubeadm-bootstrap",
				"cluster-api/kubeadm-control-plane", "cluster-api/test-extension",
				"cluster-api/v1.13.4/core", "cluster-api/v1.13.4/docker", "cluster-api/v1.13.4/kubeadm-bootstrap", "cluster-api/v1.13.4/kubeadm-control-plane",
				"conformance/v1.37.2", "coredns/v1.12.1", "coredns/v1.13.1", "coredns/v1.14.2", "coredns/v1.14.6",
				"e2e-test-image/agnhost:2.55", "e2e-test-image/agnhost:2.66.1", "e2e-test-image/busybox:1.37.0-2",
				"e2e-test-image/glibc-dns-testing:2.1.1", "e2e-test-image/kitten:1.8", "e2e-test-image/nautilus:1.8",
				"e2e-test-image/nginx:1.27.0-2", "e2e-test-image/nonewprivs:1.4", "e2e-test-image/nonroot:1.5",
				"e2e-test-image/sample-apiserver:1.29.2", "etcd/v3.6.5", "etcd/v3.6.6", "etcd/v3.6.8", "etcd/v3.7.0",
				"go-image/capd-e2e/cloud-controller-manager:v0.36.3",
				"kind-base", "kube-apiserver/v1.34.4", "kube-apiserver/v1.35.4", "kube-apiserver/v1.36.3", "kube-apiserver/v1.37.2",
				"kube-controller-manager/v1.34.4", "kube-controller-manager/v1.35.4", "kube-controller-manager/v1.36.3", "kube-controller-manager/v1.37.2", "kube-proxy/v1.34.4", "kube-proxy/v1.35.4", "kube-proxy/v1.36.3",
				"kube-proxy/v1.37.2", "kube-router", "kube-scheduler/v1.34.4", "kube-scheduler/v1.35.4", "kube-scheduler/v1.36.3", "kube-scheduler/v1.37.2",
				"node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadConfig(t)
			tt.change(c)
			if err := validate(c); err != nil {
				t.Fatalf("the changed config is invalid: %v", err)
			}
			opts := testOpts
			if tt.opts != nil {
				opts = *tt.opts
			}
			got := toBuild(t, newPlan(t, c, opts), engine)
			if !slices.Equal(got, tt.want) {
				t.Errorf("builds %v\nwant   %v", got, tt.want)
			}
		})
	}
}

func TestDecideEngineState(t *testing.T) {
	p := newPlan(t, loadConfig(t), testOpts)
	pause, _ := p.Step("pause/3.10.2")

	t.Run("missing image", func(t *testing.T) {
		engine := engineWith(p)
		if err := engine.RemoveImage(context.Background(), pause.Image); err != nil {
			t.Fatal(err)
		}
		// The node images hold pause already and their hash is unchanged:
		// only the missing image is built again.
		if got := toBuild(t, p, engine); !slices.Equal(got, []string{"pause/3.10.2"}) {
			t.Errorf("builds %v, want only pause/3.10.2", got)
		}
	})
	t.Run("empty engine builds everything", func(t *testing.T) {
		if got := toBuild(t, p, fake.New()); len(got) != len(p.Steps()) {
			t.Errorf("builds %d steps, want %d", len(got), len(p.Steps()))
		}
	})
	t.Run("unlabelled image", func(t *testing.T) {
		engine := engineWith(p)
		engine.AddImage(runtime.Image{RepoTags: []string{pause.Image}})
		ds, _ := p.Decide(context.Background(), engine)
		for _, d := range ds {
			if d.Step.ID == pause.ID && (!d.Build || !strings.Contains(d.Reason, "no "+LabelInputsHash)) {
				t.Errorf("decision %+v", d)
			}
		}
	})
	t.Run("foreign hash", func(t *testing.T) {
		engine := engineWith(p)
		engine.AddImage(runtime.Image{RepoTags: []string{pause.Image}, Labels: map[string]string{LabelInputsHash: "0123456789abcdef"}})
		ds, _ := p.Decide(context.Background(), engine)
		for _, d := range ds {
			if d.Step.ID == pause.ID && (!d.Build || !strings.Contains(d.Reason, "inputs changed (image 0123456789ab, plan "+pause.Hash[:12])) {
				t.Errorf("decision %+v", d)
			}
		}
	})
	t.Run("rebuild requested", func(t *testing.T) {
		if got := toBuild(t, p, engineWith(p), "haproxy"); !slices.Equal(got, []string{"haproxy"}) {
			t.Errorf("builds %v, want [haproxy]", got)
		}
		if _, err := p.Decide(context.Background(), engineWith(p), "nope"); err == nil || !strings.Contains(err.Error(), `rebuild "nope": no such step`) {
			t.Errorf("Decide(rebuild nope) = %v", err)
		}
	})
	t.Run("engine error", func(t *testing.T) {
		down := inspectorFunc(func(context.Context, string) (runtime.Image, error) {
			return runtime.Image{}, runtime.ErrUnavailable
		})
		_, err := p.Decide(context.Background(), down)
		if !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), "inspect image") {
			t.Errorf("Decide = %v, want a wrapped ErrUnavailable", err)
		}
	})
}

type inspectorFunc func(ctx context.Context, ref string) (runtime.Image, error)

func (f inspectorFunc) InspectImage(ctx context.Context, ref string) (runtime.Image, error) {
	return f(ctx, ref)
}

func TestRepoFiles(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("images/node/kubelet.env", "KUBELET_EXTRA_ARGS=--fail-cgroupv1=false\n")
	write("images/node/sub/containerd.toml", "restrict_oom_score_adj = true\n")
	write("images/haproxy/entry.sh", "#!/bin/sh\n")
	opts := testOpts
	opts.RepoRoot = root
	opts.Files = map[Kind][]string{KindNode: {"images/node"}, KindHAProxy: {"images/haproxy/entry.sh"}}

	c := loadConfig(t)
	engine := engineWith(newPlan(t, c, opts))
	if got := toBuild(t, newPlan(t, c, opts), engine); len(got) != 0 {
		t.Fatalf("unchanged files rebuild %v", got)
	}

	// What go build ignores does not shape an image: tests and testdata
	// of a builder's source directory.
	write("images/node/sub/node_test.go", "package sub\n")
	write("images/node/testdata/fixture.yaml", "a: 1\n")
	if got := toBuild(t, newPlan(t, c, opts), engine); len(got) != 0 {
		t.Errorf("adding a _test.go file and testdata builds %v", got)
	}
	write("images/node/sub/node.go", "package sub\n")
	if got := toBuild(t, newPlan(t, c, opts), engine); !slices.Equal(got, []string{"node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2"}) {
		t.Errorf("adding a .go file builds %v", got)
	}
	if err := os.Remove(filepath.Join(root, "images/node/sub/node.go")); err != nil {
		t.Fatal(err)
	}

	write("images/node/sub/containerd.toml", "restrict_oom_score_adj = false\n")
	if got := toBuild(t, newPlan(t, c, opts), engine); !slices.Equal(got, []string{"node/v1.34.4", "node/v1.35.4", "node/v1.36.3", "node/v1.37.2"}) {
		t.Errorf("changing a node file builds %v", got)
	}
	write("images/node/sub/containerd.toml", "restrict_oom_score_adj = true\n")
	if err := os.Chmod(filepath.Join(root, "images/haproxy/entry.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := toBuild(t, newPlan(t, c, opts), engine); !slices.Equal(got, []string{"haproxy"}) {
		t.Errorf("making a haproxy file executable builds %v", got)
	}

	opts.Files[KindPause] = []string{"images/pause"}
	if _, err := New(c, opts); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `step "pause/3.10.1": file "images/pause"`) {
		t.Errorf("New with a missing file = %v", err)
	}
	opts.Files[KindPause] = []string{"../outside"}
	if _, err := New(c, opts); err == nil || !strings.Contains(err.Error(), "must be relative to the repository root") {
		t.Errorf("New with a file outside the repo = %v", err)
	}
}

func TestFromStepsErrors(t *testing.T) {
	step := func(id string, deps ...string) Step {
		return Step{ID: id, Kind: "k", Image: "x/" + id + ":1", Deps: deps}
	}
	tests := []struct {
		name  string
		steps []Step
		want  string
	}{
		{"cycle", []Step{step("a", "b"), step("b", "c"), step("c", "a"), step("d")}, "dependency cycle: a -> b -> c -> a"},
		{"self cycle", []Step{step("a", "a")}, "dependency cycle: a -> a"},
		{"unknown dependency", []Step{step("node", "etcd/v9")}, `step "node": unknown dependency "etcd/v9"`},
		{"duplicate", []Step{step("a"), step("a")}, `step "a": duplicate ID`},
		{"no ID", []Step{{Kind: "k", Image: "x:1"}}, `step with image "x:1" has no ID`},
		{"no image", []Step{{ID: "a", Kind: "k"}}, `step "a": kind and image are required`},
		{"files without root", []Step{{ID: "a", Kind: "k", Image: "x:1", Files: []string{"f"}}}, "Options.RepoRoot is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromSteps(tt.steps, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromSteps = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestFromStepsOrderAndHash(t *testing.T) {
	steps := []Step{
		{ID: "node", Kind: "n", Image: "n:1", Deps: []string{"base", "etcd"}, Inputs: map[string]string{"v": "1"}},
		{ID: "etcd", Kind: "e", Image: "e:1"},
		{ID: "base", Kind: "b", Image: "b:1", Deps: []string{"rootfs"}},
		{ID: "rootfs", Kind: "r", Image: "r:1"},
	}
	p, err := FromSteps(steps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range p.Steps() {
		order = append(order, s.ID)
	}
	if want := []string{"rootfs", "base", "etcd", "node"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	// The hash depends on dependencies' hashes: change the rootfs's inputs
	// and base and node change, etcd does not.
	steps[3].Inputs = map[string]string{"packages": "more"}
	q, err := FromSteps(steps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"rootfs", "base", "etcd", "node"} {
		a, _ := p.Step(id)
		b, _ := q.Step(id)
		if changed, want := a.Hash != b.Hash, id != "etcd"; changed != want {
			t.Errorf("%s: hash changed = %v, want %v", id, changed, want)
		}
	}
	// The caller's steps are not modified.
	if steps[0].Hash != "" {
		t.Error("FromSteps modified its argument")
	}
}

// stubHashes answers SourceHashes from a table (package -> hash), and
// records the directories asked.
type stubHashes struct {
	hashes map[string]string
	dirs   []string
}

func (s *stubHashes) fn(dir string, pkgs, _ []string) (map[string]SourceInfo, error) {
	s.dirs = append(s.dirs, dir)
	out := map[string]SourceInfo{}
	for _, p := range pkgs {
		out[p] = SourceInfo{ImportPath: p, Hash: s.hashes[p]}
	}
	return out, nil
}

func TestClusterAPIFromATreeRebuildsOnlyWhatChanged(t *testing.T) {
	tree := t.TempDir()
	for _, f := range []string{"go.mod", "api/go.mod", "test/go.mod"} {
		if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, f), []byte("module x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "metadata.yaml"), []byte("releaseSeries:\n- {major: 1, minor: 14}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvClusterAPISource, tree)
	c := loadConfig(t)
	stub := &stubHashes{hashes: map[string]string{
		"sigs.k8s.io/cluster-api/core":                       "h-core",
		"sigs.k8s.io/cluster-api/bootstrap/kubeadm":          "h-bootstrap",
		"sigs.k8s.io/cluster-api/controlplane/kubeadm":       "h-cp",
		"sigs.k8s.io/cluster-api/test/infrastructure/docker": "h-capd",
	}}
	opts := testOpts
	opts.SourceHashes = stub.fn
	before := newPlan(t, c, opts)
	if want := []string{tree, filepath.Join(tree, "test"), c.Config.CloudControllerManagerDir()}; !slices.Equal(stub.dirs, want) {
		t.Errorf("hashed %v, want one go list per module %v", stub.dirs, want)
	}
	capd, _ := before.Step(IDCAPD)
	if capd.Dir != filepath.Join(tree, "test") || capd.Image != "registry.k8s.io/cluster-api/capd-manager:dev" ||
		capd.Inputs[InputVersion] != "v1.14.99" || capd.Inputs[InputSourceHash] != "h-capd" || capd.Published {
		t.Errorf("%s = %+v", IDCAPD, capd)
	}

	// A change to CAPD's code: only its image is rebuilt.
	stub.hashes["sigs.k8s.io/cluster-api/test/infrastructure/docker"] = "h-capd-2"
	after := newPlan(t, c, opts)
	if got := toBuild(t, after, engineWith(before)); !slices.Equal(got, []string{IDCAPD}) {
		t.Errorf("after a CAPD change, build %v; want only %s", got, IDCAPD)
	}
	// Moving the tree changes nothing: its content is hashed, not its path.
	c.ClusterAPI.Source = tree + "/."
	if got := toBuild(t, newPlan(t, c, opts), engineWith(after)); len(got) != 0 {
		t.Errorf("the same tree elsewhere rebuilds %v", got)
	}
}

func TestGoImages(t *testing.T) {
	c := loadConfig(t)
	dir := t.TempDir()
	c.GoImages = []buildspec.GoImage{
		{Image: "example.com/p/manager:dev", Dir: dir, Package: "./cmd/manager", Binary: "/manager", LDFlags: []string{"-X a.b=c", "-X d.e=f"}},
		{Image: "example.com/p/agent:v1", Module: "example.com/p", Version: "v1.0.0", Package: "example.com/p/cmd/agent", Binary: "/agent", Rootfs: "net", User: "65532"},
	}
	stub := &stubHashes{hashes: map[string]string{"./cmd/manager": "h-manager"}}
	opts := testOpts
	opts.SourceHashes = stub.fn
	p := newPlan(t, c, opts)
	m, ok := p.Step(GoImageID("example.com/p/manager:dev"))
	if !ok || m.Dir != dir || m.Inputs[InputSourceHash] != "h-manager" || m.Inputs[InputLDFlags] != "-X a.b=c\n-X d.e=f" || !m.Target {
		t.Errorf("local go image = %+v", m)
	}
	a, _ := p.Step(GoImageID("example.com/p/agent:v1"))
	if a.Inputs[InputModule] != "example.com/p" || a.Inputs[InputFrom] != "capd-e2e/debian-net:trixie" || !slices.Equal(a.Deps, []string{"rootfs/net"}) {
		t.Errorf("module go image = %+v", a)
	}
	noHashes := testOpts
	noHashes.SourceHashes = nil
	if _, err := New(c, noHashes); err == nil || !strings.Contains(err.Error(), "needs Options.SourceHashes") {
		t.Errorf("New without SourceHashes = %v", err)
	}
}
