package config

// The config's types, every field documented with its default: the schema
// of config/e2e.yaml but the image factory's keys of its build section
// (factory/buildspec has those), kept in one file to read whole
// (docs/configuration.md is its guide).

// Config is an e2e config: the harness's own config/e2e.yaml, or a
// provider's file merged over it (see Load). The first five fields have the
// same keys and meaning as upstream's clusterctl.E2EConfig; Build is ours.
type Config struct {
	// ManagementClusterName names the kind management cluster. Required:
	// upstream would otherwise pick a random name, which makes leftovers of
	// an earlier run impossible to find. Each run appends its run id to it
	// (see the suite package), so runs on one engine never share a name.
	ManagementClusterName string `json:"managementClusterName"`

	// Images are loaded into the management cluster before clusterctl init,
	// besides the images of the built-in providers and the cert-manager
	// substitute, which are always loaded (see ManagementImages). A
	// provider lists its own manager image here.
	Images []Image `json:"images,omitempty"`

	// Providers are written into the local clusterctl repository besides
	// the built-in ones (BuiltinProviders: Cluster API's core, kubeadm
	// bootstrap and control plane, and CAPD with the harness's cluster
	// templates), which the harness builds and renders itself. A provider
	// declared here with the type and name of a built-in one replaces it
	// (keeping the built-in's files it does not list itself); declaring any
	// InfrastructureProvider drops the built-in CAPD unless it is the one
	// declared. Paths are relative to the file that declares them.
	Providers []Provider `json:"providers,omitempty"`

	// Variables are written into clusterctl's config and read by the specs.
	// An environment variable of the same name overrides the value here
	// (see LookupVariable).
	Variables map[string]string `json:"variables,omitempty"`

	// IntervalsByKey (YAML key "intervals") maps "<spec>/<key>" to
	// [timeout] or [timeout, poll], each a Go duration ("5m", "10s").
	// "default/<key>" applies to every spec that has no entry of its own.
	// Read it with the Intervals method; a poll left out is
	// DefaultPollInterval.
	IntervalsByKey map[string][]string `json:"intervals,omitempty"`

	// Build is the run's part of the build section: the images it uses
	// and where they come from.
	Build Build `json:"build"`

	// path is the absolute path of the file the config was read from, or
	// the directory relative paths resolve against plus "e2e.yaml" when it
	// came from Parse.
	path string
	// basePath is the harness config this one was merged over, or "".
	basePath string
	// harnessRoot is the harness repository (or module) root, where the
	// built-in providers' cluster templates (data/) are.
	harnessRoot string
	// overrides records the environment variables that changed build
	// settings at load time, for messages.
	overrides []string
	// rawBuild is the build section as the files wrote it (merged, its
	// paths absolute): Build is decoded from it, and the image factory
	// reads its own keys from it (FactoryBuild).
	rawBuild map[string]any
}

// LoadBehavior says what happens when an image cannot be loaded into the
// management cluster.
type LoadBehavior string

const (
	// MustLoad makes a failed load fatal. It is the default.
	MustLoad LoadBehavior = "mustLoad"
	// TryLoad only logs a failed load.
	TryLoad LoadBehavior = "tryLoad"
)

// Image is an image to load into the management cluster.
type Image struct {
	// Name is the image reference, e.g. "registry.k8s.io/cluster-api/capd-manager:v1.14.2".
	// Required.
	Name string `json:"name"`
	// LoadBehavior is mustLoad or tryLoad; if unset, mustLoad.
	LoadBehavior LoadBehavior `json:"loadBehavior,omitempty"`
}

// Provider types a Provider can have (clusterctl's names).
const (
	CoreProvider             = "CoreProvider"
	BootstrapProvider        = "BootstrapProvider"
	ControlPlaneProvider     = "ControlPlaneProvider"
	InfrastructureProvider   = "InfrastructureProvider"
	IPAMProvider             = "IPAMProvider"
	RuntimeExtensionProvider = "RuntimeExtensionProvider"
	AddonProvider            = "AddonProvider"
)

// Source types of a ProviderVersion (upstream's names).
const (
	// URLSource: Value is a components YAML file: a path, file://, or an
	// http(s):// URL, which suite setup checks answers before it creates
	// anything (package sources).
	URLSource = "url"
	// KustomizeSource: Value is a kustomization root. Upstream's default.
	KustomizeSource = "kustomize"
)

// Provider is a Cluster API provider in the local clusterctl repository.
type Provider struct {
	// Name is the provider's clusterctl name (cluster-api, kubeadm, docker).
	// Required.
	Name string `json:"name"`
	// Type is one of the *Provider constants. Required.
	Type string `json:"type"`
	// Versions are the releases to put into the repository; at least one.
	Versions []ProviderVersion `json:"versions,omitempty"`
	// Files are copied next to the components of every version.
	Files []File `json:"files,omitempty"`
}

// ProviderVersion is one release of a provider.
type ProviderVersion struct {
	// Name is the release, a semantic version such as "v1.14.2". Required.
	// For type url it may be upstream's release marker instead (see
	// ReleaseMarker): "{go://<module path>@v<major>.<minor>}" stands for
	// the highest stable release of that minor series the Go module proxy
	// lists, "{go://<module path>@latest-v<major>.<minor>}" for the highest
	// including pre-releases. Validate checks its form only; suite setup
	// resolves it (package sources), replacing it by the version here and
	// wherever Value holds it.
	Name string `json:"name"`
	// Value is the components source: a file or an http(s):// URL for
	// type url, a local kustomization root for type kustomize. Relative
	// paths are relative to the config file's directory. Required.
	Value string `json:"value"`
	// Contract is the Cluster API contract, e.g. "v1beta2". Optional.
	Contract string `json:"contract,omitempty"`
	// Type is url or kustomize; if unset, kustomize (as upstream).
	Type string `json:"type,omitempty"`
	// Replacements are regular-expression rewrites applied to the
	// components YAML before it is written into the repository.
	Replacements []Replacement `json:"replacements,omitempty"`
	// Files are copied next to this version's components (metadata.yaml,
	// cluster-template-*.yaml, ...).
	Files []File `json:"files,omitempty"`
}

// Replacement rewrites the components YAML.
type Replacement struct {
	// Old is a regular expression. Required.
	Old string `json:"old"`
	// New replaces each match; may be empty.
	New string `json:"new,omitempty"`
}

// File is a file copied into the local clusterctl repository.
type File struct {
	// SourcePath is the file, relative to the config file's directory.
	// Required. Upstream requires it to exist when it loads the config, so
	// files rendered by `make images` must be rendered before the suite runs.
	SourcePath string `json:"sourcePath"`
	// TargetName is its name in the repository; if unset, the base name of
	// SourcePath.
	TargetName string `json:"targetName,omitempty"`
}

// Build is the run's part of the `build:` section: the images a run uses
// (node images, the load balancer, the CNI, Cluster API's controllers, the
// conformance images), the releases behind them and where images may be
// pulled from. How each image is built (Debian root file systems, kind's
// base image, the container runtime, the modules of etcd and CoreDNS, Go
// images) is the image factory's part of the same section, which this
// package does not read: FactoryKeys lists its keys, and factory/buildspec
// decodes and checks them.
type Build struct {
	// Kubernetes lists the Kubernetes versions that have a node image and
	// kubeadm's image set. At least one.
	Kubernetes []Kubernetes `json:"kubernetes"`

	// LoadBalancer is the haproxy image CAPD runs in front of control
	// planes.
	LoadBalancer LoadBalancer `json:"loadBalancer"`

	// KubeRouter is the CNI daemon baked into every node image and used as
	// the workload clusters' CNI.
	KubeRouter KubeRouter `json:"kubeRouter"`

	// ClusterAPI is the Cluster API release whose controllers are built.
	ClusterAPI ClusterAPI `json:"clusterAPI"`

	// CertManager is where cert-manager's CRDs come from, and the image of
	// the substitute controller that stands in for cert-manager (whose
	// images cannot be built from the module proxy).
	CertManager CertManager `json:"certManager"`

	// Kustomize renders the providers' components YAML: the built-in
	// providers' at suite setup, and every provider version of type
	// kustomize (upstream's CreateRepository runs it, through
	// CAPI_KUSTOMIZE_PATH).
	Kustomize Module `json:"kustomize"`

	// Registry says where images may be pulled from instead of built, and
	// where built images are published.
	Registry Registry `json:"registry,omitempty"`

	// CloudControllerManager is the docker cloud-controller-manager
	// (cloudprovider/, a module of the harness), built by `make images` and
	// run for each workload cluster when the variable DOCKER_CLOUD_PROVIDER
	// is "external" (see VarCloudProvider).
	CloudControllerManager CloudControllerManager `json:"cloudControllerManager,omitempty"`
}

// FactoryKeys returns the keys of the `build:` section that only the image
// factory reads, as paths under build ("kubernetes[]" stands for each
// entry of that list). Load accepts them without reading them; a key
// that is neither the run's (Build) nor one of these is an error.
// factory/buildspec decodes them (see Config.FactoryBuild), and its test
// checks that its types hold exactly these keys.
func FactoryKeys() []string {
	return []string{
		"debian", "kind", "containerRuntime", "crictl", "kubeProxyRootfs", "goImages",
		"kubeRouter.rootfs", "loadBalancer.rootfs",
		"kubernetes[].etcd.module", "kubernetes[].etcd.version",
		"kubernetes[].coreDNS.module", "kubernetes[].coreDNS.version",
		"kubernetes[].pause.version", "kubernetes[].pause.source", "kubernetes[].preload",
		"kubernetes[].conformance.rootfs", "kubernetes[].conformance.alpine",
	}
}

// CloudControllerManager is the docker cloud-controller-manager's image.
type CloudControllerManager struct {
	// Image is the reference it is built as. If unset, it is not built,
	// and DOCKER_CLOUD_PROVIDER must not be "external".
	Image string `json:"image,omitempty"`
}

// Image source policies (Registry.Policy).
const (
	// PolicyBuild builds the image; nothing is pulled.
	PolicyBuild = "build"
	// PolicyPull pulls the image and fails when it cannot.
	PolicyPull = "pull"
	// PolicyPullElseBuild pulls the image when a registry has it and
	// builds it otherwise. The default: where a registry answers, what is
	// published is pulled; where none does (the first failed pull of a
	// registry is remembered), everything is built.
	PolicyPullElseBuild = "pull-else-build"
)

// Registry configures pulling and publishing images.
type Registry struct {
	// Policy is the source of images: build, pull or pull-else-build.
	// It applies to the images that are published upstream (node images,
	// registry.k8s.io's, kube-router, haproxy, Cluster API releases), and
	// to every image when Mirror is set; the others are always built.
	// Environment override IMAGE_POLICY. If unset, pull-else-build.
	Policy string `json:"policy,omitempty"`
	// Policies overrides Policy per build step (step IDs as
	// `capd-e2e images --list` prints them; a trailing "*" matches a
	// prefix), e.g. {"node/*": build}.
	Policies map[string]string `json:"policies,omitempty"`
	// Mirror is a registry that serves every image as
	// <Mirror>/<reference> (an air-gapped mirror, or a CI cache that
	// Publish filled), e.g. "127.0.0.1:5001". Pulled images are tagged
	// with their own reference. A pulled image that carries an
	// inputs-hash label is used only when the label is current.
	// Environment override IMAGE_MIRROR. If unset, images are pulled from
	// their own registries.
	Mirror string `json:"mirror,omitempty"`
	// Publish is a registry every image of the plan is pushed to after
	// `make images`, as <Publish>/<reference>. Environment override
	// IMAGE_PUBLISH. If unset, nothing is pushed.
	Publish string `json:"publish,omitempty"`
}

// Module is a Go module at a version, fetched from the module proxy.
type Module struct {
	// Path is the module path (key "module"). Each use has a default,
	// given where it is used; set it only to build from a fork.
	Path string `json:"module,omitempty"`
	// Version is the module version, e.g. "v1.36.0". Required.
	Version string `json:"version"`
}

// String returns "module@version".
func (m Module) String() string { return m.Path + "@" + m.Version }

// KubeRouter is the CNI daemon.
type KubeRouter struct {
	// Module defaults to "github.com/cloudnativelabs/kube-router/v2";
	// Version (e.g. "v2.1.0") is required. Its manifest is the workload
	// clusters' CNI.
	Module
	// Image is the reference the daemon image is tagged with and that the
	// rendered CNI manifest pins. Required.
	Image string `json:"image"`
}

// Kubernetes is one Kubernetes version and the images kubeadm deploys
// for it.
type Kubernetes struct {
	// Version is the k8s.io/kubernetes module version, e.g. "v1.36.3".
	// Required and unique.
	Version string `json:"version"`
	// NodeImage is the node image reference. If unset,
	// "kindest/node:<Version>": CAPD maps versions to that name.
	NodeImage string `json:"nodeImage,omitempty"`
	// ImageRepository is the repository of the kube-apiserver,
	// kube-controller-manager, kube-scheduler and kube-proxy images that
	// kubeadm expects. If unset, "registry.k8s.io".
	ImageRepository string `json:"imageRepository,omitempty"`
	// Etcd is the etcd kubeadm deploys for this version.
	Etcd ComponentImage `json:"etcd"`
	// CoreDNS is the CoreDNS kubeadm deploys.
	CoreDNS ComponentImage `json:"coreDNS"`
	// Pause is the sandbox image.
	Pause ComponentImage `json:"pause"`
	// Conformance is this version's conformance suite: its image and the
	// e2e test images its tests run. Only a spec that runs conformance at
	// this version needs it; without it, none can.
	Conformance *Conformance `json:"conformance,omitempty"`
}

// Conformance is Kubernetes' conformance suite of one version: the image
// that runs it (e2e.test, ginkgo and kubectl, as upstream's
// registry.k8s.io/conformance) and the e2e test images its tests run on
// the workload cluster's nodes, which the spec preloads there.
type Conformance struct {
	// Image is the conformance image. If unset,
	// "<imageRepository>/conformance:<version>", upstream's name for it.
	Image string `json:"image,omitempty"`
	// TestImageRepository is where the test images live, as the
	// version's test/utils/image/manifest.go names it. If unset,
	// "registry.k8s.io/e2e-test-images".
	TestImageRepository string `json:"testImageRepository,omitempty"`
	// TestImages are the test images the conformance tests run,
	// "<name>:<tag>" as in manifest.go (e.g. "agnhost:2.66.1"). At least
	// one.
	TestImages []string `json:"testImages"`
}

// ComponentImage is an image kubeadm deploys beside the Kubernetes
// components: etcd, CoreDNS, pause.
type ComponentImage struct {
	// Image is the reference kubeadm expects, e.g.
	// "registry.k8s.io/etcd:3.6.8-0". Required.
	Image string `json:"image"`
}

// LoadBalancer is CAPD's haproxy image.
type LoadBalancer struct {
	// Image is the reference CAPD runs. Required; CAPD v1.14.2 defaults to
	// "kindest/haproxy:v20230606-42a2262b".
	Image string `json:"image"`
}

// ClusterAPI is the Cluster API whose controllers are built: a release
// from the module proxy, or a local working tree.
type ClusterAPI struct {
	// Version of sigs.k8s.io/cluster-api and sigs.k8s.io/cluster-api/test,
	// e.g. "v1.14.2". Required; unused when Source is set.
	Version string `json:"version"`
	// Source is a cluster-api working tree (the repository root, with
	// api/ and test/ as in git). When set, the controllers are built
	// from it and their components rendered from its config/default
	// kustomizations, under the version upstream gives a tree (the highest
	// release series of its metadata.yaml, patch 99, e.g. v1.14.99) and
	// with images tagged "dev". Dependencies still come from the module
	// proxy. Relative to the config file; environment override
	// CAPI_SOURCE_DIR (relative to the working directory).
	Source string `json:"source,omitempty"`
	// Images are the references the controllers are tagged with; the
	// rendered components YAML is rewritten to use them. With Source set,
	// their tags are replaced by "dev".
	Images ClusterAPIImages `json:"images"`
	// Previous is the release `clusterctl upgrade` starts from in the
	// clusterctl-upgrade spec (e2e/specs.ClusterctlUpgradeSpec): its
	// clusterctl and the four providers of that release, built from the
	// module proxy like Version's (or pulled where a registry has them),
	// their components rendered from that release's kustomizations into
	// the local repository beside the current version. If unset, that
	// spec cannot run (the suite's config check says so).
	Previous *PreviousClusterAPI `json:"previous,omitempty"`

	// sourceVersion is the version derived from Source at load time.
	sourceVersion string
}

// PreviousClusterAPI is an older Cluster API release to upgrade from.
type PreviousClusterAPI struct {
	// Version is a release of both sigs.k8s.io/cluster-api and
	// sigs.k8s.io/cluster-api/test, of the same major as and older than
	// the version under test, MinPreviousClusterAPI or later, e.g.
	// "v1.13.4". Its controller images are build.clusterAPI.images with
	// this tag. Required; environment override CAPI_PREVIOUS_VERSION.
	Version string `json:"version"`
	// Clusterctl is where that release's clusterctl comes from: if unset,
	// cmd/clusterctl of Version built from the module proxy; else an
	// http(s) URL of the binary, upstream's form with {OS} and {ARCH}
	// (e.g. https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.13.4/clusterctl-{OS}-{ARCH}),
	// checked at suite setup and downloaded.
	Clusterctl string `json:"clusterctl,omitempty"`
}

// ClusterAPIImages are the controller image references: the four
// providers' (required) and the test runtime extension's (optional).
type ClusterAPIImages struct {
	// Core is the cluster-api controller (sigs.k8s.io/cluster-api).
	Core string `json:"core"`
	// KubeadmBootstrap is the kubeadm bootstrap controller
	// (sigs.k8s.io/cluster-api/bootstrap/kubeadm).
	KubeadmBootstrap string `json:"kubeadmBootstrap"`
	// KubeadmControlPlane is the kubeadm control plane controller
	// (sigs.k8s.io/cluster-api/controlplane/kubeadm).
	KubeadmControlPlane string `json:"kubeadmControlPlane"`
	// Docker is CAPD's manager
	// (sigs.k8s.io/cluster-api/test/infrastructure/docker).
	Docker string `json:"docker"`
	// TestExtension is Cluster API's test runtime extension
	// (sigs.k8s.io/cluster-api/test/extension), installed as the
	// RuntimeExtensionProvider "test-extension" as upstream's e2e suite
	// does; the runtime SDK spec drives its lifecycle hooks. If unset, it
	// is neither built nor installed.
	TestExtension string `json:"testExtension,omitempty"`
}

// CertManager is cert-manager's CRDs and our stand-in for its controllers.
type CertManager struct {
	// Module defaults to "github.com/cert-manager/cert-manager"; Version
	// (e.g. "v1.21.2") is required. Its deploy/crds are installed.
	Module
	// SubstituteImage is the reference of our substitute controller,
	// which issues serving certificates and injects CA bundles. Required.
	SubstituteImage string `json:"substituteImage"`
}
