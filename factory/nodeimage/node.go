// Package nodeimage builds the images CAPD and kind run as machines: kind
// node images (plan.KindNode) on the base image of package kindbase, and
// CAPD's haproxy load balancer (plan.KindHAProxy) on a Debian rootfs.
//
// A node image holds kubeadm, kubelet and kubectl of one Kubernetes version,
// kube-router as the default CNI, kubelet settings that let it run on a
// cgroup v1 host, and every image its kubeadm set needs, imported into the
// node's containerd at build time: nothing is pulled when a node boots, and
// CAPD runs kubeadm as soon as the container starts. Their layers are kept
// outside /var (ContentStorePath), so that the /var volume kind and CAPD
// give every machine does not start as a copy of them.
//
// All container work goes through runtime.Runtime (no docker CLI); the
// package must not reach a registry, and reads other modules' files (kube-
// router's manifest) from the module cache at build time only.
package nodeimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/kindbase"
	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/cni"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// KubeBinaries compiles (or returns from its cache) the Kubernetes binaries
// of a version; the result must hold kubeadm, kubelet and kubectl.
// goimages.Builders implements it, so node images get the binaries the
// component images were built with.
type KubeBinaries interface {
	Kubernetes(ctx context.Context, modulePath, version, goarch string) (gobuild.Result, error)
}

// NodeBinaries are the binaries a node image gets in /usr/bin (where kind's
// kubelet unit and kubeadm expect them).
var NodeBinaries = []string{"kubeadm", "kubelet", "kubectl"}

// KubeletExtraArgs are added to KUBELET_EXTRA_ARGS in /etc/default/kubelet.
// Kubelet 1.35+ refuses to run on cgroup v1 unless told otherwise, and our
// machines boot cgroup v1 (hybrid).
var KubeletExtraArgs = []string{"--fail-cgroupv1=false"}

// Paths in the node image.
const (
	VersionPath          = "/kind/version"
	DefaultCNIPath       = "/kind/manifests/default-cni.yaml"
	KubeletDefaultsPath  = "/etc/default/kubelet"
	ContainerdConfigPath = "/etc/containerd/config.toml"
)

// NodeFiles are the repository paths whose content shapes node images
// (besides the base image and the component images, which are
// dependencies); give them to plan.Options.Files for plan.KindNode so that
// a change rebuilds the node images. The helper container and containerd
// config patching live in package kindbase.
var NodeFiles = []string{
	"factory/nodeimage/node.go", "factory/nodeimage/manifest.go", "framework/cni/cni.go", "framework/cni/cnipublish.go",
	"factory/kindbase/kindbase.go", "factory/kindbase/toml.go", "factory/oci",
}

// Builder builds plan.KindNode steps.
type Builder struct {
	// Runtime runs the helper container, streams the preloaded images and
	// commits the node image. Required.
	Runtime runtime.Runtime
	// Kube provides kubeadm, kubelet and kubectl. Required.
	Kube KubeBinaries
	// KubeRouter is the CNI whose manifest becomes the default CNI, pinned
	// to KubeRouter.Image (which the step must preload). Required: the
	// config's build.kubeRouter. The plan's node steps depend on the
	// kube-router step, so a change here changes their hash.
	KubeRouter config.KubeRouter
	// RunID labels the helper container; if unset, a new id per build.
	RunID string
	// TempDir stages the files copied into the image; if unset,
	// os.TempDir().
	TempDir string
	// Log receives progress; if nil, it is discarded.
	Log io.Writer
	// ReadyTimeout bounds the wait for the helper's containerd to start
	// and stop; if zero, one minute.
	ReadyTimeout time.Duration
}

var _ plan.Builder = (*Builder)(nil)

// Build makes step.Image from the base image step.Inputs["from"]: it adds
// the Kubernetes binaries of step.Inputs["version"], /kind/version, the
// default CNI manifest and the kubelet flags, sets containerd's sandbox
// image to the preloaded pause image, imports every image of
// step.Inputs["preload"] into containerd's k8s.io namespace (pinned, not
// unpacked), moves containerd's content store out of /var
// (ContentStorePath), and commits the result with kind's image
// configuration and step.Labels().
func (b *Builder) Build(ctx context.Context, step plan.Step) error {
	fail := func(err error) error { return fmt.Errorf("build node image %q: %w", step.Image, err) }
	if b.Runtime == nil || b.Kube == nil {
		return fail(errors.New("Builder.Runtime and Kube are required"))
	}
	version, from := step.Inputs[plan.InputVersion], step.Inputs[plan.InputFrom]
	preload := strings.Fields(step.Inputs[plan.InputPreload])
	if version == "" || from == "" || len(preload) == 0 {
		return fail(fmt.Errorf("inputs %q, %q and %q are required", plan.InputVersion, plan.InputFrom, plan.InputPreload))
	}
	if !slices.Contains(preload, b.KubeRouter.Image) {
		return fail(fmt.Errorf("the CNI image %q is not in the step's preload list", b.KubeRouter.Image))
	}
	pause, err := SandboxImage(preload)
	if err != nil {
		return fail(err)
	}

	b.logf("%s: Kubernetes binaries %s", step.ID, version)
	bins, err := b.Kube.Kubernetes(ctx, step.Inputs[plan.InputModule], version, step.Inputs[plan.InputArch])
	if err != nil {
		return fail(err)
	}
	// The same manifest the workload clusters get through a ClusterResourceSet.
	manifest, err := cni.KubeRouterManifest(ctx, b.KubeRouter)
	if err != nil {
		return fail(err)
	}

	rid := b.RunID
	if rid == "" {
		rid = runtime.NewRunID()
	}
	// Named after the version too: node images of two versions may build
	// at once (plan.RunOptions.Jobs).
	h, err := kindbase.StartHelper(ctx, b.Runtime, from, "capd-e2e-node-"+version+"-"+rid, rid, true)
	if err != nil {
		return fail(err)
	}
	defer h.Remove()

	// Files that patch the base's own.
	kubeletEnv, err := h.Run(ctx, "cat", KubeletDefaultsPath)
	if err != nil {
		return fail(err)
	}
	kubeletEnvPatched, err := AddKubeletArgs([]byte(kubeletEnv), KubeletExtraArgs...)
	if err != nil {
		return fail(err)
	}
	containerdConfig, err := h.Run(ctx, "cat", ContainerdConfigPath)
	if err != nil {
		return fail(err)
	}
	containerdPatched, err := kindbase.SetTOMLValue([]byte(containerdConfig), kindbase.CRIPluginTable, "sandbox_image", fmt.Sprintf("%q", pause))
	if err != nil {
		return fail(fmt.Errorf("set the sandbox image in %s: %w", ContainerdConfigPath, err))
	}

	stage, err := os.MkdirTemp(b.TempDir, "capd-e2e-node-*")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(stage)
	files := map[string][]byte{
		VersionPath:          []byte(version),
		DefaultCNIPath:       manifest,
		KubeletDefaultsPath:  kubeletEnvPatched,
		ContainerdConfigPath: containerdPatched,
	}
	for p, data := range files {
		if err := writeFile(filepath.Join(stage, p), 0o644, bytes.NewReader(data)); err != nil {
			return fail(err)
		}
	}
	for _, name := range NodeBinaries {
		p, ok := bins.Binaries[name]
		if !ok {
			return fail(fmt.Errorf("Kubernetes %s: no %s binary", version, name))
		}
		if err := copyFile(p, filepath.Join(stage, "usr", "bin", name), 0o755); err != nil {
			return fail(err)
		}
	}
	layer, err := oci.LayerFromDir(stage)()
	if err != nil {
		return fail(err)
	}
	err = b.Runtime.CopyTo(ctx, h.ID, "/", layer)
	layer.Close()
	if err != nil {
		return fail(err)
	}
	if _, err := h.Run(ctx, "kubeadm", "version", "-o", "short"); err != nil {
		return fail(err)
	}

	b.logf("%s: importing %d images", step.ID, len(preload))
	if err := b.preload(ctx, h, preload); err != nil {
		return fail(err)
	}
	if _, err := h.Run(ctx, "bash", "-c", moveContentScript); err != nil {
		return fail(fmt.Errorf("move containerd's content store to %s: %w", ContentStorePath, err))
	}
	if err := h.Commit(ctx, runtime.CommitOptions{
		Ref: step.Image, Entrypoint: kindbase.Entrypoint, Env: kindbase.Env, StopSignal: kindbase.StopSignal, Labels: step.Labels(),
	}); err != nil {
		return fail(err)
	}
	return nil
}

// preload starts containerd in the helper, streams the images from the
// engine into `ctr images import`, checks every one arrived, and stops
// containerd again so its database is closed before the commit.
func (b *Builder) preload(ctx context.Context, h *kindbase.Helper, images []string) error {
	timeout := b.ReadyTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	if _, err := h.Run(ctx, "bash", "-c", "nohup containerd >/var/log/capd-e2e-preload-containerd.log 2>&1 &"); err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	if err := poll(ctx, timeout, func() bool {
		_, err := h.Run(ctx, "ctr", "version")
		return err == nil
	}); err != nil {
		log, _ := h.Run(ctx, "tail", "-n", "20", "/var/log/capd-e2e-preload-containerd.log")
		return fmt.Errorf("containerd did not become ready: %w: %s", err, log)
	}

	archive, err := b.Runtime.SaveImages(ctx, images...)
	if err != nil {
		return err
	}
	out, err := h.RunStdin(ctx, archive, "ctr", "-n", "k8s.io", "images", "import", "--no-unpack", "--digests", "-")
	archive.Close()
	if err != nil {
		return fmt.Errorf("import images: %w", err)
	}
	b.logf("%s", out)
	// Pin every image, so that kubelet's image garbage collection never
	// removes one: none could be pulled again. (ctr 2.x's import has
	// --label for this; Debian's ctr 1.7 has not, so label afterwards.)
	if _, err := h.Run(ctx, "bash", "-c", pinScript); err != nil {
		return fmt.Errorf("pin images: %w", err)
	}
	list, err := h.Run(ctx, "ctr", "-n", "k8s.io", "images", "list", "-q")
	if err != nil {
		return err
	}
	if missing := MissingImages(images, strings.Fields(list)); len(missing) > 0 {
		return fmt.Errorf("import images: not in containerd after the import: %s", strings.Join(missing, ", "))
	}

	if _, err := h.Run(ctx, "pkill", "-x", "containerd"); err != nil {
		return fmt.Errorf("stop containerd: %w", err)
	}
	// The helper's PID 1 (sleep) does not reap, so containerd stays a
	// zombie once it has exited: wait for no containerd but zombies.
	if err := poll(ctx, timeout, func() bool {
		out, _ := h.Run(ctx, "ps", "-o", "stat=", "-C", "containerd")
		for _, state := range strings.Fields(out) {
			if !strings.HasPrefix(state, "Z") {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("stop containerd: %w", err)
	}
	// The socket and state would be hidden by the node's tmpfs /run; the
	// log is of no use in the image.
	_, err = h.Run(ctx, "rm", "-rf", "/run/containerd", "/var/log/capd-e2e-preload-containerd.log")
	return err
}

// ContentStorePath is where a node image keeps containerd's content store,
// the layers of the preloaded images; containerd's own path for it,
// ContainerdContentPath, is a symbolic link to it.
//
// kind and CAPD give every machine an anonymous volume at /var, into which
// the engine copies the image's /var when it creates the container. With
// the preloaded layers there (779 MB of v1.36.3's 788 MB /var), creating a
// machine container took a median 1.50 s on a quiet 2-core host; with them
// here, 0.84 s (make bench-boot, 5 rounds, CAPD's container options).
// containerd reads a layer from here when it first unpacks it; images
// loaded at run time (kind load, the provider images of the management
// cluster) are written here too, on the container's own layer. Snapshots
// and containerd's database stay in the volume, off the container's
// overlay, as kind wants.
const ContentStorePath = "/opt/capd-e2e/containerd-content"

// ContainerdContentPath is containerd's content store under its root.
const ContainerdContentPath = "/var/lib/containerd/io.containerd.content.v1.content"

// moveContentScript moves containerd's content store to ContentStorePath
// and links it from ContainerdContentPath.
const moveContentScript = `set -o errexit -o nounset -o pipefail
mkdir -p "$(dirname ` + ContentStorePath + `)"
mv ` + ContainerdContentPath + ` ` + ContentStorePath + `
ln -s ` + ContentStorePath + ` ` + ContainerdContentPath + `
`

// pinScript labels every image in containerd's k8s.io namespace as pinned
// (the CRI plugin's label for images that garbage collection must keep).
const pinScript = `set -o errexit -o nounset -o pipefail
ctr -n k8s.io images list -q | while read -r img; do
  ctr -n k8s.io images label "$img" io.cri-containerd.pinned=pinned >/dev/null
done`

// poll calls ok every 250 ms until it returns true, ctx ends or timeout
// passes.
func poll(ctx context.Context, timeout time.Duration, ok func() bool) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		return fmt.Errorf("gave up after %s: %w", timeout, err)
	}
	return nil
}

// SandboxImage returns the pause image of a preload list: the one whose
// repository ends in "/pause". containerd must use it as its sandbox image,
// as kubeadm expects, since no other can be pulled.
func SandboxImage(images []string) (string, error) {
	var found []string
	for _, img := range images {
		repo := img
		if i := strings.LastIndexAny(img, ":@"); i > strings.LastIndex(img, "/") {
			repo = img[:i]
		}
		if strings.HasSuffix(repo, "/pause") {
			found = append(found, img)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("want exactly one pause image among the preloaded images, found %d (%s)", len(found), strings.Join(found, ", "))
	}
	return found[0], nil
}

// MissingImages returns the images of want that are not in have (names as
// containerd lists them: fully qualified, docker.io/ for Docker Hub).
func MissingImages(want, have []string) []string {
	var missing []string
	for _, w := range want {
		if !slices.Contains(have, NormalizeImage(w)) {
			missing = append(missing, w)
		}
	}
	return missing
}

// NormalizeImage returns the fully qualified form containerd stores an
// image reference under: a reference without a registry is Docker Hub's
// ("docker.io/"), and a single-name one is in its "library/" namespace.
func NormalizeImage(ref string) string {
	first, rest, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return ref
	}
	if !ok {
		return "docker.io/library/" + ref
	}
	return "docker.io/" + first + "/" + rest
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, "node: "+strings.TrimRight(format, "\n")+"\n", args...)
	}
}

func writeFile(path string, mode os.FileMode, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(path, mode) // the umask must not change it
	}
	return err
}

func copyFile(src, dst string, mode os.FileMode) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeFile(dst, mode, f)
}
