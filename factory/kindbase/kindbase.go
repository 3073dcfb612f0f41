// Package kindbase builds kind's node base image (plan.KindKindBase) on a
// Debian rootfs image, from the files of kind's images/base directory in the
// sigs.k8s.io/kind module, read from the Go module cache at build time.
//
// It lays the files out as kind's Dockerfile does, with the changes this
// harness's machines need (see BaseFiles): containerd may not lower
// oom_score_adj, kubelet gets its cgroups in every writable cgroup v1
// hierarchy, and on a cgroup v1 host runc uses the cgroupfs driver. containerd, ctr, the runc shim, runc and the CNI plugins come
// either from the rootfs's Debian packages, linked where kind expects them
// (RuntimeFromDebian), or from their Go modules, built as kind's Dockerfile
// builds them and put where it puts them (RuntimeFromModules); crictl is
// built from its module.
//
// All container work goes through runtime.Runtime: the package must not run
// the docker CLI, pull an image or copy kind's sources into the repository.
package kindbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"

	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
)

// The image configuration of kind's base and node images (kind's
// images/base Dockerfile).
var (
	// Entrypoint runs kind's entrypoint script, which execs systemd.
	Entrypoint = []string{"/usr/local/bin/entrypoint", "/sbin/init"}
	// Env tells systemd it runs in a container.
	Env = []string{"container=docker"}
)

// StopSignal makes systemd shut down (SIGTERM would make it re-execute).
const StopSignal = "SIGRTMIN+3"

// ComponentLabel is the runtime.LabelCreatedBy value on the helper
// containers of this package.
const ComponentLabel = "images/kindbase"

// Files are the repository paths whose content shapes the base image (this
// package's sources, not its tests, and the packages that build crictl and
// the layer); give them to plan.Options.Files for plan.KindKindBase so that
// a change rebuilds it.
var Files = []string{"factory/kindbase/kindbase.go", "factory/kindbase/toml.go", "factory/gobuild", "internal/gomod", "factory/oci"}

// Builder builds plan.KindKindBase steps.
type Builder struct {
	// Runtime runs the helper container and stores the image. Required.
	Runtime runtime.Runtime
	// Go finds the kind module in the module cache and builds crictl.
	// Required.
	Go *gobuild.Builder
	// RunID labels the helper container (runtime.LabelRunID), so a leak
	// check finds it after a crash; if unset, a new id per build.
	RunID string
	// Log receives progress and command output; if nil, it is discarded.
	Log io.Writer
}

var _ plan.Builder = (*Builder)(nil)

// Build makes step.Image from the rootfs image step.Inputs["from"]: it
// copies in kind's base files and crictl, then runs kind's Dockerfile steps
// (SetupScript) in a helper container and commits it with kind's image
// configuration and step.Labels().
func (b *Builder) Build(ctx context.Context, step plan.Step) error {
	fail := func(err error) error { return fmt.Errorf("build kind base image %q: %w", step.Image, err) }
	if b.Runtime == nil || b.Go == nil {
		return fail(errors.New("Builder.Runtime and Builder.Go are required"))
	}
	source := step.Inputs[plan.InputRuntime]
	script, err := SetupScript(source)
	if err != nil {
		return fail(err)
	}
	from := step.Inputs[plan.InputFrom]
	kindMod, kindVer, err := splitModule(step.Inputs[plan.InputKind])
	if err != nil {
		return fail(err)
	}
	criMod, criVer, err := splitModule(step.Inputs[plan.InputCrictl])
	if err != nil {
		return fail(err)
	}
	kindInfo, err := b.Go.Download(ctx, module.Version{Path: kindMod, Version: kindVer})
	if err != nil {
		return fail(err)
	}
	files, err := BaseFiles(filepath.Join(kindInfo.Dir, "images", "base", "files"))
	if err != nil {
		return fail(err)
	}

	builds := []binaryBuild{{gobuild.Target{
		Modules:  []module.Version{{Path: criMod, Version: criVer}},
		Packages: []string{criMod + "/cmd/crictl"},
		// As cri-tools' Makefile: the version without its "v".
		LDFlags: gobuild.LDFlagsX(gobuild.Setting{Package: criMod + "/pkg/version", Name: "Version", Value: strings.TrimPrefix(criVer, "v")}),
		GOARCH:  step.Inputs[plan.InputArch],
	}, "usr/local/bin"}}
	if source == RuntimeFromModules {
		rt, err := runtimeBuilds(step)
		if err != nil {
			return fail(err)
		}
		builds = append(builds, rt...)
	}
	binaries, err := b.buildBinaries(ctx, builds)
	if err != nil {
		return fail(err)
	}
	files = append(files, binaries...)

	b.logf("assembling %s on %s", step.Image, from)
	rid := b.RunID
	if rid == "" {
		rid = runtime.NewRunID()
	}
	c, err := StartHelper(ctx, b.Runtime, from, "capd-e2e-kindbase-"+rid, rid, false)
	if err != nil {
		return fail(err)
	}
	defer c.Remove()
	layer, err := oci.LayerFromFiles(files)()
	if err != nil {
		return fail(err)
	}
	defer layer.Close()
	if err := b.Runtime.CopyTo(ctx, c.ID, "/", layer); err != nil {
		return fail(err)
	}
	out, err := c.Run(ctx, "bash", "-c", script)
	b.logf("%s", out)
	if err != nil {
		return fail(err)
	}
	if err := c.Commit(ctx, runtime.CommitOptions{
		Ref: step.Image, Entrypoint: Entrypoint, Env: Env, StopSignal: StopSignal, Labels: step.Labels(),
	}); err != nil {
		return fail(err)
	}
	return nil
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, "kind-base: "+strings.TrimRight(format, "\n")+"\n", args...)
	}
}

func splitModule(s string) (module, version string, err error) {
	module, version, ok := strings.Cut(s, "@")
	if !ok || module == "" || version == "" {
		return "", "", fmt.Errorf("%q is not module@version", s)
	}
	return module, version, nil
}

// Paths of the files this package adds to or changes in kind's layout.
const (
	ContainerdConfigPath = "etc/containerd/config.toml"
	// CgroupV1ScriptPath is the kubelet ExecStartPre that creates kubelet's
	// cgroups in every writable cgroup v1 hierarchy.
	CgroupV1ScriptPath = "kind/bin/create-kubelet-cgroup-v1.sh"
	// CgroupV1DropInPath runs it before kubelet starts.
	CgroupV1DropInPath = "etc/systemd/system/kubelet.service.d/12-capd-e2e-cgroup-v1.conf"
	// CgroupfsScriptPath is containerd's ExecStartPre that puts runc on the
	// cgroupfs driver on a cgroup v1 host (CgroupfsScript).
	CgroupfsScriptPath = "kind/bin/use-cgroupfs-on-cgroup-v1.sh"
	// CgroupfsDropInPath runs it before containerd starts.
	CgroupfsDropInPath = "etc/systemd/system/containerd.service.d/12-capd-e2e-cgroupfs.conf"
)

// CRIPluginTable is the TOML table of containerd's CRI plugin in the
// version 2 configuration kind ships.
const CRIPluginTable = `plugins."io.containerd.grpc.v1.cri"`

// CRIRegistryTable is the CRI plugin's registry table, where config_path
// names the directory of per-registry hosts.toml files.
const CRIRegistryTable = CRIPluginTable + ".registry"

// RegistryConfigDir is containerd's config_path in the base image: one
// directory per registry host, each with a hosts.toml (mirrors, plain
// HTTP), read at every pull, so a mirror can be named while the node
// runs. kind's own recipe for a local registry sets the same path.
const RegistryConfigDir = "/etc/containerd/certs.d"

// BaseFiles returns the files of the base image from kind's images/base/files
// directory, with the modes kind's Dockerfile gives them (0755 for scripts
// in usr/local/bin and kind/bin, 0644 otherwise), and these changes:
//   - containerd's CRI plugin runs with restrict_oom_score_adj = true:
//     without CAP_SYS_RESOURCE in the engine, runc cannot lower a pod
//     sandbox's oom_score_adj and every pod fails to start;
//   - kubelet runs CgroupV1Script first (CgroupV1DropInPath): on a cgroup v1
//     host, systemd in the node mounts some controllers (hugetlb, net_cls,
//     perf_event) only after kind's entrypoint created kubelet's cgroups, and
//     kubelet refuses to start when one hierarchy lacks them;
//   - on a cgroup v1 host, containerd runs runc with the cgroupfs driver
//     (CgroupfsScript, run by CgroupfsDropInPath before containerd starts);
//   - containerd reads registry hosts from RegistryConfigDir (the CRI
//     plugin's registry config_path, unset in kind's file): containerd 1.7
//     reads no hosts.toml without it, and a node could not be given a
//     mirror (framework/mirror) without a restart. An empty directory
//     changes nothing.
func BaseFiles(dir string) ([]oci.File, error) {
	var files []oci.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if d := path.Dir(rel); d == "usr/local/bin" || d == "kind/bin" {
			mode = 0o755
		}
		files = append(files, oci.File{Path: rel, Mode: mode, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read kind base files: %w", err)
	}
	i := slices.IndexFunc(files, func(f oci.File) bool { return f.Path == ContainerdConfigPath })
	if i < 0 || !slices.ContainsFunc(files, func(f oci.File) bool { return f.Path == "usr/local/bin/entrypoint" }) {
		return nil, fmt.Errorf("read kind base files: %s is not kind's images/base/files (no %s or entrypoint)", dir, ContainerdConfigPath)
	}
	patched, err := SetTOMLValue(files[i].Data, CRIPluginTable, "restrict_oom_score_adj", "true")
	if err != nil {
		return nil, fmt.Errorf("patch %s: %w", ContainerdConfigPath, err)
	}
	patched, err = AddTOMLTable(patched, CRIRegistryTable, "config_path", `"`+RegistryConfigDir+`"`)
	if err != nil {
		return nil, fmt.Errorf("patch %s: %w", ContainerdConfigPath, err)
	}
	files[i].Data = patched
	files = append(files,
		oci.File{Path: CgroupV1ScriptPath, Mode: 0o755, Data: []byte(CgroupV1Script)},
		oci.File{Path: CgroupV1DropInPath, Mode: 0o644, Data: []byte(cgroupV1DropIn)},
		oci.File{Path: CgroupfsScriptPath, Mode: 0o755, Data: []byte(CgroupfsScript)},
		oci.File{Path: CgroupfsDropInPath, Mode: 0o644, Data: []byte(cgroupfsDropIn)},
	)
	return files, nil
}

// CgroupV1Script creates kubelet's cgroups (kubelet and kubelet.slice, for
// either cgroup driver) in every cgroup v1 hierarchy mounted directly under
// /sys/fs/cgroup, skipping those it cannot write (read-only ones are not
// kubelet's to manage). A new cpuset cgroup gets its parent's cpus and mems,
// without which no process can join it. On cgroup v2 it does nothing: kind's
// own script handles that.
const CgroupV1Script = `#!/bin/sh
# Installed by capd-e2e: see factory/kindbase.
set -eu
[ -f /sys/fs/cgroup/cgroup.controllers ] && exit 0
awk '$3 == "cgroup" { print $2 }' /proc/self/mounts | while read -r dir; do
  case "$dir" in /sys/fs/cgroup/*/*) continue ;; esac
  for cg in kubelet kubelet.slice; do
    mkdir -p "$dir/$cg" 2>/dev/null || continue
    if [ -f "$dir/$cg/cpuset.cpus" ] && [ -z "$(cat "$dir/$cg/cpuset.cpus")" ]; then
      cat "$dir/cpuset.cpus" > "$dir/$cg/cpuset.cpus" || true
      cat "$dir/cpuset.mems" > "$dir/$cg/cpuset.mems" || true
    fi
  done
done
`

const cgroupV1DropIn = `# Installed by capd-e2e: kubelet needs its cgroups in every cgroup v1
# hierarchy, including those systemd mounts after kind's entrypoint ran.
[Service]
ExecStartPre=/` + CgroupV1ScriptPath + `
`

// CgroupfsScript sets SystemdCgroup = false for every runc runtime in
// containerd's config when the host has cgroup v1, so that runc manages
// containers' cgroups with its cgroupfs driver; on cgroup v2 it does
// nothing. runc's systemd driver on cgroup v1 freezes a container's cgroup
// before it changes the unit's properties, and the v1 freezer gives up when
// processes keep forking in it ("unable to freeze"): under the load of a
// conformance run on 2 cores that failed one container start in a hundred
// (docs/conformance.md). The cgroupfs driver does not freeze.
//
// kubelet takes its cgroup driver from the CRI (KubeletCgroupDriverFromCRI,
// on by default), which containerd answers from the default runc runtime's
// SystemdCgroup, so the kubeadm config's cgroupDriver: systemd is
// overridden without touching it. containerd answers only from 2.0 on (1.7
// only in releases of 2025), so the script leaves a containerd 1.x alone:
// kubelet would fall back to its config's systemd and the two would differ.
//
// CAPD_E2E_CGROUP_ROOT and CAPD_E2E_CONTAINERD_CONFIG name other paths for
// the package's tests; systemd sets neither.
const CgroupfsScript = `#!/bin/sh
# Installed by capd-e2e: see factory/kindbase.
set -eu
root=${CAPD_E2E_CGROUP_ROOT:-/sys/fs/cgroup}
config=${CAPD_E2E_CONTAINERD_CONFIG:-/etc/containerd/config.toml}
[ -f "$root/cgroup.controllers" ] && exit 0
version=$(containerd --version | awk '{ print $3 }')
major=${version#v}
major=${major%%.*}
case "$major" in
  ''|*[!0-9]*) echo "capd-e2e: cannot read containerd's version from '$version'; keeping its cgroup driver" >&2; exit 0 ;;
esac
if [ "$major" -lt 2 ]; then
  echo "capd-e2e: containerd $version may not report its cgroup driver to kubelet; keeping systemd" >&2
  exit 0
fi
sed -i 's/^\([[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*\)true/\1false/' "$config"
echo "capd-e2e: cgroup v1 host: runc uses the cgroupfs driver" >&2
`

const cgroupfsDropIn = `# Installed by capd-e2e: runc's systemd cgroup driver freezes containers
# on cgroup v1 and fails under load; use cgroupfs there.
[Service]
ExecStartPre=/` + CgroupfsScriptPath + `
`

// FirstBootUnits are the systemd units that rebuild, on a machine's first
// boot, caches the image already holds (the dynamic linker's and the
// journal's message catalog) and then stamp /etc/.updated and /var/.updated.
// They run when /usr is newer than those stamps (ConditionNeedsUpdate),
// which on these hosts it is on every machine: /usr had the boot time as its
// mtime in every machine we looked at (the engine's storage driver here is
// fuse-overlayfs; the entrypoint and the engine change files under /usr at
// boot). Measured on 2 cores, the catalog rebuild alone took 0.3-1.1 s on
// the path to multi-user.target, which CAPD waits for before it bootstraps a
// machine. SetupScript runs ldconfig and rebuilds the catalog once at build
// time and masks them.
var FirstBootUnits = []string{"ldconfig.service", "systemd-journal-catalog-update.service", "systemd-update-done.service"}

// Sources of containerd, runc and the CNI plugins (plan.InputRuntime, the
// config's build.containerRuntime.source).
const (
	// RuntimeFromDebian links them from the rootfs's Debian packages
	// (containerd, runc, containernetworking-plugins).
	RuntimeFromDebian = "debian"
	// RuntimeFromModules builds them from their modules
	// (plan.InputContainerd, plan.InputRunc, plan.InputCNIPlugins).
	RuntimeFromModules = "modules"
)

// CNIPlugins are the CNI plugins the base image holds in /opt/cni/bin:
// kind's four (kindnet's) and bridge, which kube-router's CNI
// configuration uses.
var CNIPlugins = []string{"plugins/ipam/host-local", "plugins/main/loopback", "plugins/main/ptp", "plugins/meta/portmap", "plugins/main/bridge"}

// binaryBuild is a Go build whose binaries go into the image's dir.
type binaryBuild struct {
	target gobuild.Target
	dir    string
}

// buildBinaries runs each build and returns its binaries as executable
// files in its dir.
func (b *Builder) buildBinaries(ctx context.Context, builds []binaryBuild) ([]oci.File, error) {
	var files []oci.File
	for _, bd := range builds {
		b.logf("building %s", bd.target)
		res, err := b.Go.Build(ctx, bd.target)
		if err != nil {
			return nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(res.Binaries)) {
			data, err := os.ReadFile(res.Binaries[name])
			if err != nil {
				return nil, err
			}
			files = append(files, oci.File{Path: bd.dir + "/" + name, Mode: 0o755, Data: data})
		}
	}
	return files, nil
}

// runtimeBuilds returns the builds of containerd, ctr, the runc shim,
// runc and CNIPlugins from the modules of step.Inputs, each into the
// directory kind's Dockerfile puts them in.
//
// As kind builds them, except for the linking: containerd with the tags
// that drop the snapshotters a node never selects, and without cgo (the
// shim is built so by containerd's own Makefile; the daemon loses nothing
// it uses here); runc with seccomp (cgo, libseccomp), linked statically as
// runc's `make static` does, so it does not depend on the libseccomp of
// the host it was built on; the plugins without cgo.
func runtimeBuilds(step plan.Step) ([]binaryBuild, error) {
	arch := step.Inputs[plan.InputArch]
	ctrdMod, ctrdVer, err := splitModule(step.Inputs[plan.InputContainerd])
	if err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	runcMod, runcVer, err := splitModule(step.Inputs[plan.InputRunc])
	if err != nil {
		return nil, fmt.Errorf("runc: %w", err)
	}
	cniMod, cniVer, err := splitModule(step.Inputs[plan.InputCNIPlugins])
	if err != nil {
		return nil, fmt.Errorf("CNI plugins: %w", err)
	}
	var cniPkgs []string
	for _, p := range CNIPlugins {
		cniPkgs = append(cniPkgs, cniMod+"/"+p)
	}
	return []binaryBuild{
		{gobuild.Target{
			Modules:  []module.Version{{Path: ctrdMod, Version: ctrdVer}},
			Packages: []string{ctrdMod + "/cmd/containerd", ctrdMod + "/cmd/ctr", ctrdMod + "/cmd/containerd-shim-runc-v2"},
			Tags:     []string{"no_aufs", "no_zfs", "no_btrfs", "no_devmapper", "urfave_cli_no_docs"},
			LDFlags: gobuild.LDFlagsX(
				gobuild.Setting{Package: ctrdMod + "/version", Name: "Version", Value: ctrdVer},
				gobuild.Setting{Package: ctrdMod + "/version", Name: "Package", Value: "github.com/containerd/containerd/v2"},
			),
			GOARCH: arch,
		}, "usr/local/bin"},
		{gobuild.Target{
			Modules:  []module.Version{{Path: runcMod, Version: runcVer}},
			Packages: []string{runcMod},
			CGO:      true,
			Tags:     []string{"seccomp", "urfave_cli_no_docs", "netgo", "osusergo"},
			LDFlags:  []string{"-extldflags", "-static"},
			GOARCH:   arch,
		}, "usr/local/sbin"},
		{gobuild.Target{
			Modules:  []module.Version{{Path: cniMod, Version: cniVer}},
			Packages: cniPkgs,
			LDFlags:  gobuild.LDFlagsX(gobuild.Setting{Package: cniMod + "/pkg/utils/buildversion", Name: "BuildVersion", Value: cniVer}),
			GOARCH:   arch,
		}, "opt/cni/bin"},
	}, nil
}

// SetupScript returns the script that runs in the helper container after
// the files are copied in: the RUN steps of kind's images/base Dockerfile
// (prune systemd's default units, enable kubelet, containerd and
// undo-mount-hacks, create /etc/kubernetes/manifests), the first-boot work
// of FirstBootUnits, then, for RuntimeFromDebian, links Debian's
// containerd, ctr, shim, runc and CNI plugins where kind's units and
// containerd config expect them (RuntimeFromModules copied them there),
// writes /etc/containerd/cri-base.json with `ctr oci spec` and kind's hook,
// and checks every tool runs. An unknown source is an error.
func SetupScript(source string) (string, error) {
	var runtimeScript string
	switch source {
	case RuntimeFromDebian:
		runtimeScript = linkDebianRuntime
	case RuntimeFromModules:
		runtimeScript = checkModulesRuntime
	default:
		return "", fmt.Errorf("container runtime source %q is not %q or %q", source, RuntimeFromDebian, RuntimeFromModules)
	}
	return setupSystemd + runtimeScript + setupCRI, nil
}

var setupSystemd = `set -o errexit -o nounset -o pipefail
chmod 755 /kind /kind/bin
find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
  /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
  /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> /etc/systemd/journald.conf
[ -e /sbin/init ] || ln -s /usr/lib/systemd/systemd /sbin/init
systemctl enable kubelet.service containerd.service undo-mount-hacks.service
systemctl mask systemd-binfmt.service
ldconfig
journalctl --update-catalog
systemctl mask ` + strings.Join(FirstBootUnits, " ") + `
mkdir -p /etc/kubernetes/manifests /usr/local/sbin /opt/cni/bin
`

const linkDebianRuntime = `for b in containerd ctr containerd-shim-runc-v2; do
  test -x /usr/bin/$b || { echo "missing /usr/bin/$b: is the containerd package in the rootfs?" >&2; exit 1; }
  ln -sf /usr/bin/$b /usr/local/bin/$b
done
test -x /usr/sbin/runc || { echo "missing /usr/sbin/runc: is the runc package in the rootfs?" >&2; exit 1; }
ln -sf /usr/sbin/runc /usr/local/sbin/runc
ls /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /usr/lib/cni/portmap /usr/lib/cni/ptp >/dev/null \
  || { echo "missing CNI plugins: is containernetworking-plugins in the rootfs?" >&2; exit 1; }
for p in /usr/lib/cni/*; do ln -sf "$p" /opt/cni/bin/; done
`

const checkModulesRuntime = `for b in /usr/local/bin/containerd /usr/local/bin/ctr /usr/local/bin/containerd-shim-runc-v2 /usr/local/sbin/runc \
  /opt/cni/bin/bridge /opt/cni/bin/host-local /opt/cni/bin/loopback /opt/cni/bin/portmap /opt/cni/bin/ptp; do
  test -x $b || { echo "missing $b, built from its module" >&2; exit 1; }
done
`

const setupCRI = `
ctr oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json
containerd --version
runc --version
crictl --version
`

// Helper is a container started to build an image in.
type Helper struct {
	// ID is the container's ID.
	ID     string
	name   string
	labels map[string]string
	rt     runtime.Runtime
	// cpu is the Meter of StartHelper's context: Remove adds the
	// container's CPU time to it.
	cpu *cputime.Meter
}

// StartHelper runs image as a helper container named name that sleeps
// until it is removed, optionally privileged (to run containerd in it). It
// is labelled with runID (runtime.RunLabels), so a leak check finds it.
func StartHelper(ctx context.Context, rt runtime.Runtime, image, name, runID string, privileged bool) (*Helper, error) {
	labels := runtime.RunLabels(runID, ComponentLabel, nil)
	id, err := rt.RunContainer(ctx, runtime.ContainerSpec{
		Name: name, Image: image, Labels: labels, Privileged: privileged,
		Entrypoint: []string{"sleep", "infinity"},
	})
	if err != nil {
		return nil, fmt.Errorf("start helper container %q: %w", name, err)
	}
	return &Helper{ID: id, name: name, labels: labels, rt: rt, cpu: cputime.From(ctx)}, nil
}

// Commit commits the helper as an image. The engine copies a container's
// labels into the image it commits, whatever the commit says, and every
// container made from the image would inherit them: a kind node labelled
// with the build's run id would look like a leftover of the build. So the
// helper's own labels are overridden with empty values (which no leak
// check's run id matches) unless opts.Labels sets them.
func (h *Helper) Commit(ctx context.Context, opts runtime.CommitOptions) error {
	labels := make(map[string]string, len(h.labels)+len(opts.Labels))
	for k := range h.labels {
		labels[k] = ""
	}
	maps.Copy(labels, opts.Labels)
	opts.Labels = labels
	if _, err := h.rt.Commit(ctx, h.ID, opts); err != nil {
		return fmt.Errorf("commit helper container %q: %w", h.name, err)
	}
	return nil
}

// Run runs a command in the helper and returns its combined output; a
// non-zero exit is an error that carries the output.
func (h *Helper) Run(ctx context.Context, cmd ...string) (string, error) {
	return h.RunStdin(ctx, nil, cmd...)
}

// RunStdin is Run with stdin streamed to the command.
func (h *Helper) RunStdin(ctx context.Context, stdin io.Reader, cmd ...string) (string, error) {
	var out bytes.Buffer
	res, err := h.rt.Exec(ctx, h.ID, runtime.ExecOptions{Cmd: cmd, Stdin: stdin, Stdout: &out, Stderr: &out})
	if err != nil {
		return out.String(), err
	}
	if res.ExitCode != 0 {
		return out.String(), &runtime.ExitError{Container: h.name, Cmd: cmd, ExitCode: res.ExitCode, Stderr: out.Bytes()}
	}
	return out.String(), nil
}

// Remove removes the helper, with a context of its own: it runs in defers,
// when the build's context may have ended. First it adds the CPU time the
// container used to the Meter (internal/cputime) of StartHelper's
// context, if it had one.
func (h *Helper) Remove() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if h.cpu != nil {
		if out, err := h.Run(ctx, "sh", "-c", cputime.CgroupScript); err == nil {
			if d, err := cputime.ParseCgroup(out); err == nil {
				h.cpu.Add(d)
			}
		}
	}
	_ = h.rt.RemoveContainer(ctx, h.ID) // labelled with the run: a container left is reaped by clean-e2e
}
