// Package plan is the build plan of `make images`: every image the E2E
// needs, as a graph of steps with their inputs, a content hash per step,
// and the decision which steps to build and which images to reuse.
//
// A step's hash covers its kind, image reference, inputs (versions,
// modules, settings), the content of the repository files it uses and the
// hashes of its dependencies, so a change anywhere below an image changes
// its hash. Each built image carries the hash in the label LabelInputsHash;
// an image whose label matches is up to date and is reused.
//
// This package does not build anything and must not know how: builders
// (one per Kind, written elsewhere) do, through the Builder interface. It
// talks to the engine only to read image labels, through ImageInspector.
package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LabelInputsHash is the image label holding the hash of the inputs an
// image was built from.
const LabelInputsHash = "e2e.capd.x-k8s.io/inputs-hash"

// hashSchema changes whenever the hashing itself changes, so that images
// hashed the old way are rebuilt rather than wrongly reused.
const hashSchema = "capd-e2e/plan/v1"

// Kind says what a step builds; each Kind has one Builder.
type Kind string

// Step kinds. The input keys each kind gets are listed with it; every
// kind but KindRootfs, KindHAProxy and KindPause also gets InputGo, and all
// get InputArch.
const (
	// KindRootfs is a Debian root file system made with debootstrap.
	// Inputs: suite, mirror, variant, packages.
	KindRootfs Kind = "debian-rootfs"
	// KindKindBase is kind's base image on a rootfs. Inputs: from, kind,
	// runtime, crictl, and containerd, runc, cni-plugins when runtime is
	// "modules".
	KindKindBase Kind = "kind-base"
	// KindKubeComponent is kube-apiserver, kube-controller-manager,
	// kube-scheduler or kube-proxy (the last on a rootfs, input from).
	// Inputs: component, module, version, package.
	KindKubeComponent Kind = "kube-component"
	// KindEtcd is etcd. Inputs: module, version.
	KindEtcd Kind = "etcd"
	// KindCoreDNS is CoreDNS. Inputs: module, version.
	KindCoreDNS Kind = "coredns"
	// KindPause is the pause image, pause.c compiled statically. Inputs:
	// version, module and source (the k8s.io/kubernetes version holding
	// pause.c).
	KindPause Kind = "pause"
	// KindKubeRouter is the CNI daemon on a rootfs. Inputs: from, module,
	// version, package.
	KindKubeRouter Kind = "kube-router"
	// KindNode is a node image: the base image plus kubeadm, kubelet,
	// kubectl and preloaded images. Inputs: from, module, version,
	// preload (the images to import, space separated).
	KindNode Kind = "node"
	// KindHAProxy is CAPD's load balancer on a rootfs. Inputs: from.
	KindHAProxy Kind = "haproxy"
	// KindClusterAPI is a Cluster API controller. Inputs: module, version,
	// package.
	KindClusterAPI Kind = "cluster-api"
	// KindCertManagerSubstitute is our stand-in for cert-manager's
	// controllers, built from repository files. Inputs: cert-manager.
	KindCertManagerSubstitute Kind = "cert-manager-substitute"
	// KindGoImage is one Go binary in an image (build.goImages): a
	// provider's manager. Inputs: module, version and package, or
	// source-hash and package (a local directory, Step.Dir); ldflags,
	// tags, cgo, binary, user, and from when on a rootfs.
	KindGoImage Kind = "go-image"
	// KindConformance is Kubernetes' conformance image: e2e.test, ginkgo
	// and kubectl on a rootfs. Inputs: from, module, version.
	KindConformance Kind = "conformance"
	// KindTestImage is one of Kubernetes' e2e test images (agnhost,
	// busybox, ...), which conformance tests run. Inputs: name, tag,
	// module and version (the k8s.io/kubernetes whose
	// test/utils/image/manifest.go names the tag, and whose
	// test/images holds the sources), from (the rootfs) except for
	// busybox, kitten and nautilus, and alpine (the module holding
	// Alpine's minirootfs) for kitten and nautilus.
	KindTestImage Kind = "e2e-test-image"
)

// Input keys of Step.Inputs. Lists are space separated and sorted.
const (
	InputArch        = "arch"         // GOARCH / Debian architecture of the image
	InputGo          = "go"           // Go toolchain version, e.g. go1.26.8
	InputFrom        = "from"         // image the step builds on
	InputModule      = "module"       // Go module path
	InputVersion     = "version"      // version of the module (or of pause)
	InputPackage     = "package"      // main package to build
	InputComponent   = "component"    // kube component name
	InputSuite       = "suite"        // Debian suite
	InputMirror      = "mirror"       // Debian mirror URL
	InputVariant     = "variant"      // debootstrap variant
	InputPackages    = "packages"     // Debian packages to include
	InputKind        = "kind"         // kind module@version
	InputRuntime     = "runtime"      // container runtime source: debian or modules
	InputContainerd  = "containerd"   // containerd module@version
	InputRunc        = "runc"         // runc module@version
	InputCNIPlugins  = "cni-plugins"  // CNI plugins module@version
	InputCrictl      = "crictl"       // cri-tools module@version
	InputSource      = "source"       // k8s.io/kubernetes version with pause.c; BusyBox release
	InputPreload     = "preload"      // images imported into a node image
	InputCertManager = "cert-manager" // cert-manager module@version
	InputSourceHash  = "source-hash"  // content hash of a local tree's sources (gobuild.SourceInfo)
	InputLDFlags     = "ldflags"      // extra linker flags, newline separated
	InputTags        = "tags"         // build tags, space separated
	InputCGO         = "cgo"          // "true" when cgo is on
	InputBinary      = "binary"       // path of the binary in the image
	InputUser        = "user"         // user of the entrypoint
	InputHarness     = "harness"      // "true": compiled as the suite is, sharing its packages (gobuild.Target.Harness)
	InputName        = "name"         // an e2e test image's name, e.g. agnhost
	InputTag         = "tag"          // an e2e test image's tag, e.g. 2.66.1
	InputAlpine      = "alpine"       // module@version holding Alpine's minirootfs
)

// Step is one image to build.
type Step struct {
	// ID names the step uniquely, e.g. "node/v1.36.3" or "etcd/v3.6.8".
	ID string
	// Kind selects the Builder.
	Kind Kind
	// Image is the reference the built image is tagged with.
	Image string
	// Inputs are the settings that determine the image (see the Input*
	// keys and the Kind constants for which a kind gets).
	Inputs map[string]string
	// Files are repository files or directories (relative to
	// Options.RepoRoot) whose content determines the image: the builder's
	// own sources, scripts and templates.
	Files []string
	// Deps are the IDs of the steps whose images this one builds on or
	// contains.
	Deps []string
	// Hash is the step's content hash, set by the Plan; builders put it on
	// the image as LabelInputsHash (see Labels).
	Hash string

	// Dir is the local directory a KindClusterAPI or KindGoImage step
	// builds in, when it builds a working tree rather than a published
	// module. It is not hashed: the tree's content is, as
	// Inputs[InputSourceHash], so a tree moved elsewhere is not rebuilt.
	Dir string
	// Target marks an image the E2E uses itself (node images, the load
	// balancer, controllers); the others are only built into targets. A
	// run builds or pulls the targets, and whatever they need.
	Target bool
	// Published marks an image that is published under its reference
	// (registry.k8s.io, kindest/..., docker.io), so a registry may serve
	// it instead of a build.
	Published bool
}

// Labels returns the labels a builder must put on the step's image.
func (s Step) Labels() map[string]string {
	return map[string]string{LabelInputsHash: s.Hash}
}

// Plan is a validated, hashed, ordered set of steps.
type Plan struct {
	steps []Step // dependencies first
	index map[string]int
}

// Options are the settings of a Plan that do not come from the config.
type Options struct {
	// RepoRoot is the directory Step.Files and Files paths are relative
	// to. Required when any step uses files.
	RepoRoot string
	// Files adds, per kind, repository files or directories to every step
	// of that kind: the builder's sources and whatever files it copies
	// into images, so that changing them rebuilds what they affect.
	Files map[Kind][]string
	// GoVersion is the Go toolchain of Go-built images; if unset,
	// runtime.Version() (New only).
	GoVersion string
	// Arch is the images' architecture; if unset, runtime.GOARCH (New
	// only).
	Arch string
	// SourceHashes hashes what main packages in a local directory are
	// built from (gobuild.Builder.SourceHashes), keyed by the packages as
	// given. Required (New only) when the config builds from a working
	// tree: build.clusterAPI.source or a build.goImages dir.
	SourceHashes func(dir string, pkgs []string, tags []string) (map[string]SourceInfo, error)
}

// SourceInfo is what SourceHashes reports for one main package.
type SourceInfo struct {
	// ImportPath is the package's import path.
	ImportPath string
	// Hash is the content hash of everything it is built from.
	Hash string
}

// FromSteps checks steps (unique IDs, known dependencies, no cycles), orders
// them dependencies first (ties by ID, so the order is stable) and computes
// their hashes. The steps are copied.
func FromSteps(steps []Step, opts Options) (*Plan, error) {
	byID := make(map[string]Step, len(steps))
	for _, s := range steps {
		if s.ID == "" {
			return nil, fmt.Errorf("step with image %q has no ID", s.Image)
		}
		if _, dup := byID[s.ID]; dup {
			return nil, fmt.Errorf("step %q: duplicate ID", s.ID)
		}
		if s.Kind == "" || s.Image == "" {
			return nil, fmt.Errorf("step %q: kind and image are required", s.ID)
		}
		s = s.clone()
		s.Files = append(s.Files, opts.Files[s.Kind]...)
		slices.Sort(s.Files)
		s.Files = slices.Compact(s.Files)
		slices.Sort(s.Deps)
		s.Deps = slices.Compact(s.Deps)
		byID[s.ID] = s
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		for _, d := range byID[id].Deps {
			if _, ok := byID[d]; !ok {
				return nil, fmt.Errorf("step %q: unknown dependency %q", id, d)
			}
		}
	}
	order, err := topoSort(byID)
	if err != nil {
		return nil, err
	}

	p := &Plan{index: make(map[string]int, len(order))}
	fileHashes := map[string]string{} // a directory shared by steps is hashed once
	for _, id := range order {
		s := byID[id]
		h, err := hashStep(s, p, opts.RepoRoot, fileHashes)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", id, err)
		}
		s.Hash = h
		p.index[id] = len(p.steps)
		p.steps = append(p.steps, s)
	}
	return p, nil
}

// topoSort orders steps dependencies first; among steps that are ready at
// the same time, by ID. A cycle is an error naming it.
func topoSort(byID map[string]Step) ([]string, error) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make(map[string]int, len(byID))
	order := make([]string, 0, len(byID))
	var path []string
	var visit func(id string) error
	visit = func(id string) error {
		switch state[id] {
		case done:
			return nil
		case visiting:
			start := slices.Index(path, id)
			cycle := append(slices.Clone(path[start:]), id)
			return fmt.Errorf("dependency cycle: %s", strings.Join(cycle, " -> "))
		}
		state[id] = visiting
		path = append(path, id)
		for _, d := range byID[id].Deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		order = append(order, id)
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		if err := visit(id); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// hashStep computes a step's hash; its dependencies must be in p already.
func hashStep(s Step, p *Plan, root string, cache map[string]string) (string, error) {
	doc := struct {
		Schema string            `json:"schema"`
		Kind   Kind              `json:"kind"`
		Image  string            `json:"image"`
		Inputs map[string]string `json:"inputs"`
		Files  map[string]string `json:"files"`
		Deps   map[string]string `json:"deps"`
	}{
		Schema: hashSchema,
		Kind:   s.Kind,
		Image:  s.Image,
		Inputs: s.Inputs,
		Files:  map[string]string{},
		Deps:   map[string]string{},
	}
	for _, f := range s.Files {
		h, ok := cache[f]
		if !ok {
			var err error
			if h, err = hashPath(root, f); err != nil {
				return "", err
			}
			cache[f] = h
		}
		doc.Files[f] = h
	}
	for _, d := range s.Deps {
		doc.Deps[d] = p.steps[p.index[d]].Hash
	}
	// encoding/json writes map keys sorted: the document is canonical.
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// hashPath hashes a file, or a directory tree (paths, executable bits and
// contents of its regular files and symlink targets), below root. In a tree,
// what `go build` ignores is left out: *_test.go files and testdata
// directories. Builders' sources are listed as directories (Options.Files),
// and an edit to their tests must not rebuild every image.
func hashPath(root, rel string) (string, error) {
	if root == "" {
		return "", fmt.Errorf("file %q: Options.RepoRoot is not set", rel)
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(filepath.Clean(rel), "..") {
		return "", fmt.Errorf("file %q: must be relative to the repository root", rel)
	}
	base := filepath.Join(root, rel)
	h := sha256.New()
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(base, path)
		if path != base && goBuildIgnores(d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "link %q %q\n", filepath.ToSlash(name), target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			c := sha256.New()
			if _, err := io.Copy(c, f); err != nil {
				return err
			}
			fmt.Fprintf(h, "file %q %t %x\n", filepath.ToSlash(name), info.Mode()&0o111 != 0, c.Sum(nil))
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("file %q: %w", rel, fs.ErrNotExist)
		}
		return "", fmt.Errorf("hash file %q: %w", rel, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goBuildIgnores reports whether d is a test file or a testdata directory.
func goBuildIgnores(d fs.DirEntry) bool {
	if d.IsDir() {
		return d.Name() == "testdata"
	}
	return strings.HasSuffix(d.Name(), "_test.go")
}

// Steps returns the steps, dependencies first.
func (p *Plan) Steps() []Step {
	out := make([]Step, len(p.steps))
	for i, s := range p.steps {
		out[i] = s.clone()
	}
	return out
}

func (s Step) clone() Step {
	s.Inputs = maps.Clone(s.Inputs)
	s.Files = slices.Clone(s.Files)
	s.Deps = slices.Clone(s.Deps)
	return s
}

// Step returns the step with the given ID.
func (p *Plan) Step(id string) (Step, bool) {
	i, ok := p.index[id]
	if !ok {
		return Step{}, false
	}
	return p.steps[i].clone(), true
}
