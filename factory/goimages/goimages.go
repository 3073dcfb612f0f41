// Package goimages builds the images of `make images` whose content is
// compiled from Go modules (and pause, compiled from C): the Kubernetes
// component images, etcd, CoreDNS, pause, kube-router, the four Cluster
// API controllers, and Kubernetes' conformance image with the e2e test
// images its tests run (testimages.go). Each is a plan.Builder for one
// plan.Kind.
//
// The images imitate their upstream Dockerfiles where it matters to the
// programs that run them: binary paths, entrypoints and users (kubeadm
// starts the control plane by bare command name, so those binaries are on
// PATH; kube-proxy runs /usr/local/bin/kube-proxy). Images without a base
// are FROM scratch plus the binary and a /tmp, /etc/passwd and /etc/group
// (the parts of distroless/static that the programs could touch).
//
// This package compiles on the host through package gobuild and assembles
// images through package oci; it must not start containers and must not
// reach a registry.
package goimages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"

	"golang.org/x/mod/module"

	"github.com/capd-e2e/capd-e2e/factory/buildspec"
	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// KubernetesBinaries are the main packages (under k8s.io/kubernetes/cmd/)
// built for every Kubernetes version, in one go command: the four component
// images use the first four, node images the last three.
var KubernetesBinaries = []string{
	config.KubeAPIServer, config.KubeControllerManager, config.KubeScheduler, config.KubeProxy,
	"kubeadm", "kubelet", "kubectl",
}

// Files are the repository paths whose content shapes this package's
// images; give them to plan.Options.Files for every kind in Kinds so that
// a change rebuilds the images.
var Files = []string{"factory/goimages", "factory/gobuild", "internal/gomod", "factory/oci"}

// Kinds are the plan kinds Register adds a builder for.
var Kinds = []plan.Kind{plan.KindKubeComponent, plan.KindEtcd, plan.KindCoreDNS, plan.KindPause, plan.KindKubeRouter, plan.KindClusterAPI, plan.KindGoImage,
	plan.KindConformance, plan.KindTestImage}

// Builders builds the Go-compiled images. Its methods return the
// plan.Builder of each kind; Register adds them all to a map.
type Builders struct {
	// Images stores the built images. Required.
	Images runtime.Images
	// Go compiles. Required.
	Go *gobuild.Builder
	// TempDir is where image contents are staged; if unset, os.TempDir().
	TempDir string
	// CC is the C compiler for pause; if unset, "gcc".
	CC string
}

// Register adds the builder of every kind this package builds to m.
func (b *Builders) Register(m map[plan.Kind]plan.Builder) {
	m[plan.KindKubeComponent] = plan.BuilderFunc(b.buildKubeComponent)
	m[plan.KindEtcd] = plan.BuilderFunc(b.buildEtcd)
	m[plan.KindCoreDNS] = plan.BuilderFunc(b.buildCoreDNS)
	m[plan.KindPause] = plan.BuilderFunc(b.buildPause)
	m[plan.KindKubeRouter] = plan.BuilderFunc(b.buildKubeRouter)
	m[plan.KindClusterAPI] = plan.BuilderFunc(b.buildClusterAPI)
	m[plan.KindGoImage] = plan.BuilderFunc(b.buildGoImage)
	m[plan.KindConformance] = plan.BuilderFunc(b.buildConformance)
	m[plan.KindTestImage] = plan.BuilderFunc(b.buildTestImage)
}

// SharedBuild returns a key naming the go command a step's builder shares
// with other steps', or "" for none. Give it to
// plan.RunOptions.Exclusive: steps with one key would only wait for each
// other's lock (package gobuild locks a wrapper module while it builds),
// holding a job idle. The component and node images of a Kubernetes
// version share one build of all its binaries (see Kubernetes); the
// Cluster API controllers of one module and version share its wrapper
// module, and those of one working tree its directory.
func SharedBuild(s plan.Step) string {
	switch s.Kind {
	case plan.KindTestImage:
		// Only those compiled in the version's Kubernetes build.
		switch s.Inputs[plan.InputName] {
		case buildspec.TestImageAgnhost, buildspec.TestImageNonewprivs, buildspec.TestImageSampleAPIServer, buildspec.TestImageKitten, buildspec.TestImageNautilus:
		default:
			return ""
		}
		fallthrough
	case plan.KindKubeComponent, plan.KindNode, plan.KindConformance:
		mod := s.Inputs[plan.InputModule]
		if mod == "" {
			mod = buildspec.DefaultKubernetesModule
		}
		return mod + "@" + s.Inputs[plan.InputVersion]
	case plan.KindClusterAPI:
		if s.Dir != "" {
			return s.Dir
		}
		return s.Inputs[plan.InputModule] + "@" + s.Inputs[plan.InputVersion]
	}
	return ""
}

// Kubernetes builds every binary of KubernetesBinaries of module
// (k8s.io/kubernetes, or a fork) at version, with the version settings and
// build tags of Kubernetes' own release build, and returns their paths by
// name. Results are cached (see gobuild.Builder): node image builders call
// this for kubeadm, kubelet and kubectl and get the binaries the component
// images were built with, without compiling again.
func (b *Builders) Kubernetes(ctx context.Context, modulePath, version, goarch string) (gobuild.Result, error) {
	if modulePath == "" {
		modulePath = buildspec.DefaultKubernetesModule
	}
	m := module.Version{Path: modulePath, Version: version}
	info, err := b.Go.Download(ctx, m)
	if err != nil {
		return gobuild.Result{}, err
	}
	pkgs := make([]string, len(KubernetesBinaries))
	for i, name := range KubernetesBinaries {
		pkgs[i] = modulePath + "/cmd/" + name
	}
	return b.Go.Build(ctx, gobuild.Target{
		Modules:        []module.Version{m},
		Packages:       pkgs,
		LocalVersion:   gobuild.KubernetesStagingVersion,
		LocalVersionID: "kubernetes-staging",
		Tags:           gobuild.KubernetesTags,
		LDFlags:        gobuild.KubernetesLDFlags(gobuild.SourceOf(info)),
		GOARCH:         goarch,
	})
}

// buildKubeComponent builds kube-apiserver, kube-controller-manager,
// kube-scheduler (FROM scratch) or kube-proxy (on the rootfs in the "from"
// input), with the binary at /usr/local/bin/<component> as entrypoint.
func (b *Builders) buildKubeComponent(ctx context.Context, s plan.Step) error {
	comp := s.Inputs[plan.InputComponent]
	res, err := b.Kubernetes(ctx, s.Inputs[plan.InputModule], s.Inputs[plan.InputVersion], s.Inputs[plan.InputArch])
	if err != nil {
		return err
	}
	bin, ok := res.Binaries[comp]
	if !ok {
		return fmt.Errorf("component %q: not one of %s", comp, strings.Join(KubernetesBinaries, ", "))
	}
	target := "/usr/local/bin/" + comp
	return b.image(ctx, s, imageContent{
		base:       s.Inputs[plan.InputFrom],
		files:      map[string]string{target: bin},
		scratchEtc: s.Inputs[plan.InputFrom] == "",
		config:     oci.Config{Entrypoint: []string{target}},
	})
}

// buildEtcd builds etcd and etcdctl (go.etcd.io/etcd/etcdctl/v3 at the same
// version, in the same go command) into /usr/local/bin, where kubeadm's
// static pod finds "etcd" by name.
func (b *Builders) buildEtcd(ctx context.Context, s plan.Step) error {
	server := module.Version{Path: s.Inputs[plan.InputModule], Version: s.Inputs[plan.InputVersion]}
	info, err := b.Go.Download(ctx, server)
	if err != nil {
		return err
	}
	// etcdctl's module sits next to server/v3 in etcd's repository.
	etcdctl := module.Version{Path: strings.TrimSuffix(strings.TrimSuffix(server.Path, "/v3"), "/server") + "/etcdctl/v3", Version: server.Version}
	res, err := b.Go.Build(ctx, gobuild.Target{
		Modules:  []module.Version{server, etcdctl},
		Packages: []string{server.Path, etcdctl.Path},
		LDFlags:  gobuild.EtcdLDFlags(gobuild.SourceOf(info)),
		GOARCH:   s.Inputs[plan.InputArch],
	})
	if err != nil {
		return err
	}
	return b.image(ctx, s, imageContent{
		files: map[string]string{
			"/usr/local/bin/etcd":    res.Path(gomod.ExecName(server.Path)),
			"/usr/local/bin/etcdctl": res.Path(gomod.ExecName(etcdctl.Path)),
		},
		scratchEtc: true,
		dirs:       []string{"/var/lib/etcd"},
		config:     oci.Config{Entrypoint: []string{"/usr/local/bin/etcd"}},
	})
}

// buildCoreDNS builds CoreDNS as /coredns, its upstream entrypoint. It runs
// as root, unlike upstream's nonroot user: upstream gives the binary file
// capabilities with setcap, which this image does not have, and kubeadm's
// deployment grants NET_BIND_SERVICE for port 53.
func (b *Builders) buildCoreDNS(ctx context.Context, s plan.Step) error {
	m := module.Version{Path: s.Inputs[plan.InputModule], Version: s.Inputs[plan.InputVersion]}
	info, err := b.Go.Download(ctx, m)
	if err != nil {
		return err
	}
	res, err := b.Go.Build(ctx, gobuild.Target{
		Modules:  []module.Version{m},
		Packages: []string{m.Path},
		Tags:     gobuild.CoreDNSTags,
		LDFlags:  gobuild.CoreDNSLDFlags(gobuild.SourceOf(info)),
		GOARCH:   s.Inputs[plan.InputArch],
	})
	if err != nil {
		return err
	}
	return b.image(ctx, s, imageContent{
		files:      map[string]string{"/coredns": res.Path(gomod.ExecName(m.Path))},
		scratchEtc: true,
		config:     oci.Config{Entrypoint: []string{"/coredns"}, WorkingDir: "/"},
	})
}

// buildKubeRouter builds kube-router on the rootfs in the "from" input
// (iptables, ipset), at /usr/local/bin/kube-router as entrypoint.
func (b *Builders) buildKubeRouter(ctx context.Context, s plan.Step) error {
	m := module.Version{Path: s.Inputs[plan.InputModule], Version: s.Inputs[plan.InputVersion]}
	info, err := b.Go.Download(ctx, m)
	if err != nil {
		return err
	}
	pkg := s.Inputs[plan.InputPackage]
	res, err := b.Go.Build(ctx, gobuild.Target{
		Modules:  []module.Version{m},
		Packages: []string{pkg},
		LDFlags:  gobuild.KubeRouterLDFlags(m.Path, gobuild.SourceOf(info)),
		GOARCH:   s.Inputs[plan.InputArch],
	})
	if err != nil {
		return err
	}
	return b.image(ctx, s, imageContent{
		base:   s.Inputs[plan.InputFrom],
		files:  map[string]string{"/usr/local/bin/kube-router": res.Path(gomod.ExecName(pkg))},
		dirs:   []string{"/var/lib/gobgp"},
		config: oci.Config{Entrypoint: []string{"/usr/local/bin/kube-router"}, WorkingDir: "/root"},
	})
}

// capiModule is the module of Cluster API's core, kubeadm bootstrap and
// kubeadm control plane managers; CAPD lives in capiModule+"/test".
const capiModule = config.ClusterAPIModule

// buildClusterAPI builds a Cluster API manager as /manager, from the
// release's module or, when the step has a Dir, from a working tree. As
// upstream's Dockerfiles: the three managers of the main module with the
// fieldsv1string tag and user 65532 (distroless nonroot), CAPD without the
// tag and as root (it talks to the host's Docker socket).
func (b *Builders) buildClusterAPI(ctx context.Context, s plan.Step) error {
	pkg := s.Inputs[plan.InputPackage]
	user := ""
	if !strings.HasPrefix(pkg, config.ClusterAPITestModule+"/") {
		user = "65532"
	}
	var bin string
	if s.Dir != "" {
		// A tree has no release: its version is the one derived from its
		// metadata.yaml, and no commit is stamped, so that the image
		// depends on the tree's content only.
		res, err := b.local(ctx, s, gobuild.LocalTarget{
			Dir:      s.Dir,
			Packages: []string{pkg},
			Tags:     plan.ClusterAPITags(pkg, s.Inputs[plan.InputVersion]),
			LDFlags:  gobuild.ClusterAPILDFlags(gobuild.Source{Version: s.Inputs[plan.InputVersion]}),
			GOARCH:   s.Inputs[plan.InputArch],
		})
		if err != nil {
			return err
		}
		bin = res.Path(gomod.ExecName(pkg))
	} else {
		m := module.Version{Path: s.Inputs[plan.InputModule], Version: s.Inputs[plan.InputVersion]}
		info, err := b.Go.Download(ctx, module.Version{Path: capiModule, Version: m.Version})
		if err != nil {
			return err
		}
		res, err := b.Go.Build(ctx, gobuild.Target{
			Modules:  []module.Version{m},
			Packages: []string{pkg},
			Tags:     plan.ClusterAPITags(pkg, s.Inputs[plan.InputVersion]),
			LDFlags:  gobuild.ClusterAPILDFlags(gobuild.SourceOf(info)),
			GOARCH:   s.Inputs[plan.InputArch],
			Harness:  s.Inputs[plan.InputHarness] == "true",
		})
		if err != nil {
			return err
		}
		bin = res.Path(gomod.ExecName(pkg))
	}
	return b.image(ctx, s, imageContent{
		files:      map[string]string{"/manager": bin},
		scratchEtc: true,
		config:     oci.Config{Entrypoint: []string{"/manager"}, WorkingDir: "/", User: user},
	})
}

// local builds a working tree's packages, checking that the tree still
// has the content the plan hashed (it may have changed since).
func (b *Builders) local(ctx context.Context, s plan.Step, t gobuild.LocalTarget) (gobuild.Result, error) {
	sources, err := b.Go.SourceHashes(ctx, t)
	if err != nil {
		return gobuild.Result{}, err
	}
	for _, p := range t.Packages {
		if got := sources[p].Hash; got != s.Inputs[plan.InputSourceHash] {
			return gobuild.Result{}, fmt.Errorf("the sources of %s in %s changed since the plan was made: run again", p, t.Dir)
		}
	}
	return b.Go.BuildLocal(ctx, t, sources)
}

// buildGoImage builds a build.goImages entry: its binary at the configured
// path as entrypoint, on scratch (with /tmp and /etc/passwd) or a rootfs.
func (b *Builders) buildGoImage(ctx context.Context, s plan.Step) error {
	pkg := s.Inputs[plan.InputPackage]
	var ldflags, tags []string
	if v := s.Inputs[plan.InputLDFlags]; v != "" {
		ldflags = strings.Split(v, "\n")
	}
	if v := s.Inputs[plan.InputTags]; v != "" {
		tags = strings.Fields(v)
	}
	cgo := s.Inputs[plan.InputCGO] == "true"
	harness := s.Inputs[plan.InputHarness] == "true"
	var bin string
	if s.Dir != "" {
		res, err := b.local(ctx, s, gobuild.LocalTarget{Dir: s.Dir, Packages: []string{pkg}, CGO: cgo, Tags: tags, LDFlags: ldflags, GOARCH: s.Inputs[plan.InputArch], Harness: harness})
		if err != nil {
			return err
		}
		for _, p := range res.Binaries {
			bin = p
		}
	} else {
		m := module.Version{Path: s.Inputs[plan.InputModule], Version: s.Inputs[plan.InputVersion]}
		res, err := b.Go.Build(ctx, gobuild.Target{Modules: []module.Version{m}, Packages: []string{pkg}, CGO: cgo, Tags: tags, LDFlags: ldflags, GOARCH: s.Inputs[plan.InputArch], Harness: harness})
		if err != nil {
			return err
		}
		bin = res.Path(gomod.ExecName(pkg))
	}
	binary := s.Inputs[plan.InputBinary]
	return b.image(ctx, s, imageContent{
		base:       s.Inputs[plan.InputFrom],
		files:      map[string]string{binary: bin},
		scratchEtc: s.Inputs[plan.InputFrom] == "",
		config:     oci.Config{Entrypoint: []string{binary}, WorkingDir: "/", User: s.Inputs[plan.InputUser]},
	})
}

// buildPause compiles build/pause/linux/pause.c of k8s.io/kubernetes at the
// "source" version statically, as its Makefile does, into /pause run as
// 65535:65535 (its Dockerfile).
func (b *Builders) buildPause(ctx context.Context, s plan.Step) error {
	if arch := s.Inputs[plan.InputArch]; arch != "" && arch != goruntime.GOARCH {
		return fmt.Errorf("pause: compiling for %s on %s is not supported", arch, goruntime.GOARCH)
	}
	src := module.Version{Path: s.Inputs[plan.InputModule], Version: s.Inputs[plan.InputSource]}
	info, err := b.Go.Download(ctx, src)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(b.TempDir, "capd-e2e-pause-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "pause")
	cc := b.CC
	if cc == "" {
		cc = "gcc"
	}
	args := []string{"-Os", "-Wall", "-Werror", "-static",
		"-DVERSION=v" + s.Inputs[plan.InputVersion] + "-" + src.Version,
		"-o", out, filepath.Join(info.Dir, "build", "pause", "linux", "pause.c")}
	cmd := exec.CommandContext(ctx, cc, args...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cputime.Run(ctx, cmd); err != nil {
		return fmt.Errorf("compile pause.c of %s: %s %s: %w\n%s", src, cc, strings.Join(args, " "), err, output.Bytes())
	}
	return b.image(ctx, s, imageContent{
		files:  map[string]string{"/pause": out},
		config: oci.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"},
	})
}

// imageContent is what goes into one image.
type imageContent struct {
	// base is the image to build on; empty means scratch.
	base string
	// under are layers put on base before the staged files (a root file
	// system archive).
	under []oci.Layer
	// files maps absolute image paths to host files (made executable).
	files map[string]string
	// dirs are extra empty directories.
	dirs []string
	// scratchEtc adds /tmp, /etc/passwd, /etc/group and /etc/nsswitch.conf.
	scratchEtc bool
	// extra are further entries made in memory (links, small files, modes
	// such as set-user-ID), in a layer of their own above the others.
	extra  []oci.File
	config oci.Config
}

// passwd and group mirror distroless/static's, so programs that look up
// their user (or run as nonroot 65532) find it.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// image stages c in a directory and builds s.Image from it, labelled with
// the step's labels.
func (b *Builders) image(ctx context.Context, s plan.Step, c imageContent) (err error) {
	if b.Images == nil {
		return errors.New("goimages: Builders.Images is nil")
	}
	stage, err := os.MkdirTemp(b.TempDir, "capd-e2e-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	for dst, src := range c.files {
		p := filepath.Join(stage, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := linkOrCopy(src, p); err != nil {
			return fmt.Errorf("stage %s: %w", dst, err)
		}
	}
	for _, d := range c.dirs {
		if err := os.MkdirAll(filepath.Join(stage, d), 0o755); err != nil {
			return err
		}
	}
	if c.scratchEtc {
		tmp := filepath.Join(stage, "tmp")
		if err := os.Mkdir(tmp, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(stage, "etc"), 0o755); err != nil {
			return err
		}
		for name, data := range map[string]string{"passwd": passwd, "group": group, "nsswitch.conf": "hosts: files dns\n"} {
			if err := os.WriteFile(filepath.Join(stage, "etc", name), []byte(data), 0o644); err != nil {
				return err
			}
		}
	}
	cfg := c.config
	cfg.Labels = maps.Clone(cfg.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	maps.Copy(cfg.Labels, s.Labels())
	if v := s.Inputs[plan.InputVersion]; v != "" && cfg.Labels["org.opencontainers.image.version"] == "" {
		cfg.Labels["org.opencontainers.image.version"] = v
	}
	if m := s.Inputs[plan.InputModule]; m != "" {
		cfg.Labels["org.opencontainers.image.source"] = m
	}
	layers := append(slices.Clone(c.under), oci.LayerFromDir(stage))
	if len(c.extra) > 0 {
		layers = append(layers, oci.LayerFromFiles(c.extra))
	}
	return oci.Build(ctx, b.Images, oci.Spec{Ref: s.Image, Base: c.base, Layers: layers, Config: cfg})
}

// linkOrCopy hard-links src to dst (the cache and the stage are usually on
// one file system), copying when it cannot, and makes dst executable.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return os.Chmod(dst, 0o755)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
