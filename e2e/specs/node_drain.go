package specs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capie2e "sigs.k8s.io/cluster-api/test/e2e"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// specNodeDrain is upstream's NodeDrainTimeoutSpec (node-drain), and its
// facts.
var specNodeDrain = declare(specFacts{
	name: "node-drain", label: LabelNodeDrain,
	variables: []string{varKubernetesVersion},
	// Upstream's (node_drain.go: its BeforeEach checks two intervals are
	// set, which its regexp counts as waits too): the cluster, its control
	// plane and workers, the topology changes, the Deployments available,
	// the drains and deletions; upstreamWaiters': the MachinePools.
	waits: slices.Concat([]string{"wait-cluster", "wait-machine-pool-nodes"},
		slices.Repeat([]string{"wait-control-plane"}, 5),
		slices.Repeat([]string{"wait-worker-nodes"}, 4),
		slices.Repeat([]string{"wait-deployment-available"}, 7),
		slices.Repeat([]string{"wait-machine-deleted"}, 12)),
	files:    []string{"node_drain.go", "upstream.go"},
	upstream: "e2e/node_drain.go",
})

// UpstreamDrainPodImage is the image of the Pods upstream's node-drain
// spec deploys (sigs.k8s.io/cluster-api/test v1.14.2,
// framework.DeployPodAndWait: fixed, not an input).
const UpstreamDrainPodImage = "registry.k8s.io/pause:3.10.1"

// VolumeAttachmentFinalizer holds the fake VolumeAttachments that
// NodeDrainTimeoutSpec creates with VerifyNodeVolumeDetach, as upstream's
// suite names it.
const VolumeAttachmentFinalizer = "test.cluster.x-k8s.io/block"

// NodeDrainTimeoutSpecInput is the input of NodeDrainTimeoutSpec.
type NodeDrainTimeoutSpecInput struct {
	CommonInput

	// Flavor is the cluster template's flavor, of a ClusterClass with a
	// KubeadmControlPlane and a MachineDeployment. If unset, "topology"
	// (upstream's default).
	Flavor *string

	// VerifyNodeVolumeDetach makes the spec check that a Machine's deletion
	// waits for its Node's volumes to be detached: a VolumeAttachment,
	// attached and held by VolumeAttachmentFinalizer, is created for each
	// Node (no CSI driver detaches it), and the spec unblocks them with a
	// volume detach timeout of one second, as upstream's suite does.
	VerifyNodeVolumeDetach bool

	// PodImage is the engine's image that runs as UpstreamDrainPodImage in
	// the spec's Pods: the engine gets that tag for the spec (removed
	// after it, unless the engine had it before) and CAPD loads it into
	// every machine (DOCKER_PRELOAD_IMAGES), since the nodes reach no
	// registry. If unset, the pause image of KUBERNETES_VERSION's build
	// entry (config.PauseImageVariable); when the engine already holds
	// UpstreamDrainPodImage, that image is used and nothing is tagged.
	PodImage string
}

// NodeDrainTimeoutSpec is upstream's NodeDrainTimeoutSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): a cluster of three control plane Machines and
// one worker, MachineDrainRules ordering the drain, Deployments whose Pods
// are unevictable (a PodDisruptionBudget), wait to complete, hold a
// finalizer or are skipped; the control plane scaled to one and the
// workers to none; the drain's order, its blocking by each kind of Pod and
// by the volumes (VerifyNodeVolumeDetach) checked through the Machines'
// conditions; then a drain timeout of one second lets the Machines go.
// Labelled node-drain; a suite adds ClusterClass.
//
// Before upstream's spec creates its cluster, this one gives the engine
// the image upstream's Pods run (PodImage) and renders the cluster with a
// copy of the clusterctl config that adds it to DOCKER_PRELOAD_IMAGES and
// holds CommonInput's ClusterctlVariables, which upstream's spec has no
// place for. CleanupTimeout is not used, and Ginkgo cannot cancel its
// steps (see MachineDeploymentScaleSpec).
func NodeDrainTimeoutSpec(inputGetter func() NodeDrainTimeoutSpecInput) {
	Context("node-drain", Label(LabelNodeDrain), func() {
		capie2e.NodeDrainTimeoutSpec(context.Background(), func() capie2e.NodeDrainTimeoutSpecInput {
			in := inputGetter()
			ctx := context.Background()
			Expect(in.E2EConfig).ToNot(BeNil(), "%s: E2EConfig is required", specNodeDrain)
			source := in.PodImage
			if source == "" {
				version := in.E2EConfig.MustGetVariable(varKubernetesVersion)
				source = in.E2EConfig.GetVariableOrEmpty(config.PauseImageVariable(version))
				Expect(source).ToNot(BeEmpty(), "%s: variable %s is unset and PodImage is empty: no image to run as %s (give build.kubernetes %s a pause image)",
					specNodeDrain, config.PauseImageVariable(version), UpstreamDrainPodImage, version)
			}
			remove, err := provideImage(ctx, in.Runtime, source, UpstreamDrainPodImage)
			Expect(err).ToNot(HaveOccurred(), "%s", specNodeDrain)
			if remove != nil {
				By(fmt.Sprintf("the engine's %s runs as %s for the spec", source, UpstreamDrainPodImage))
				DeferCleanup(func(ctx SpecContext) { Expect(remove(ctx)).To(Succeed()) }, NodeTimeout(cleanupAllowance))
			}
			vars := map[string]string{}
			maps.Copy(vars, in.ClusterctlVariables)
			preload, ok := in.ClusterctlVariables[varDockerPreloadImages]
			if !ok {
				preload = in.E2EConfig.GetVariableOrEmpty(varDockerPreloadImages)
			}
			vars[varDockerPreloadImages] = preloadWith(preload, UpstreamDrainPodImage)
			configPath := filepath.Join(in.ArtifactFolder, "clusterctl-configs", fmt.Sprintf("%s-%s.yaml", specNodeDrain, rand.String(5)))
			Expect(os.MkdirAll(filepath.Dir(configPath), 0o750)).To(Succeed())
			Expect(clusterctl.CopyAndAmendClusterctlConfig(ctx, clusterctl.CopyAndAmendClusterctlConfigInput{
				ClusterctlConfigPath: in.ClusterctlConfigPath, OutputPath: configPath, Variables: vars,
			})).To(Succeed(), "%s: the clusterctl config with %s", specNodeDrain, varDockerPreloadImages)

			out := capie2e.NodeDrainTimeoutSpecInput{
				E2EConfig:              in.E2EConfig,
				ClusterctlConfigPath:   configPath,
				BootstrapClusterProxy:  in.BootstrapClusterProxy,
				ArtifactFolder:         in.ArtifactFolder,
				SkipCleanup:            in.SkipCleanup,
				ControlPlaneWaiters:    upstreamWaiters(in.CommonInput, specNodeDrain),
				InfrastructureProvider: in.InfrastructureProvider,
				Flavor:                 in.Flavor,
				PostNamespaceCreated:   in.PostNamespaceCreated,
				VerifyNodeVolumeDetach: in.VerifyNodeVolumeDetach,
			}
			if in.VerifyNodeVolumeDetach {
				out.CreateAdditionalResources = createBlockingVolumeAttachments
			}
			return out
		})
	})
}

// imageInspector is an engine that can say whether it holds an image.
type imageInspector interface {
	InspectImage(ctx context.Context, ref string) (runtime.Image, error)
}

// imageTagger is what provideImage needs of the engine.
type imageTagger interface {
	imageInspector
	TagImage(ctx context.Context, source, target string) error
	RemoveImage(ctx context.Context, ref string) error
}

// provideImage makes the engine hold target: as it is when it does (and
// remove is nil), else as a tag of source, which remove takes away.
func provideImage(ctx context.Context, engine Engine, source, target string) (remove func(context.Context) error, err error) {
	images, ok := engine.(imageTagger)
	if !ok {
		return nil, fmt.Errorf("the engine (%T) cannot tag images, needed to run %s as %s", engine, source, target)
	}
	if _, err := images.InspectImage(ctx, target); err == nil {
		return nil, nil
	} else if !errors.Is(err, runtime.ErrNotFound) {
		return nil, fmt.Errorf("inspect %s: %w", target, err)
	}
	if _, err := images.InspectImage(ctx, source); err != nil {
		return nil, fmt.Errorf("the image %s, to run as %s: %w (is it built? make images)", source, target, err)
	}
	if err := images.TagImage(ctx, source, target); err != nil {
		return nil, fmt.Errorf("tag %s as %s: %w", source, target, err)
	}
	return func(ctx context.Context) error {
		if err := images.RemoveImage(ctx, target); err != nil {
			return fmt.Errorf("remove the tag %s, given to %s for the spec: %w", target, source, err)
		}
		return nil
	}, nil
}

// createBlockingVolumeAttachments creates, for each Node of cluster, a
// VolumeAttachment that says its volume is attached and that no CSI
// driver will detach (attacher "manual"), held by
// VolumeAttachmentFinalizer: a Machine's deletion then waits for it.
func createBlockingVolumeAttachments(ctx context.Context, proxy framework.ClusterProxy, cluster *clusterv1.Cluster) {
	c := proxy.GetWorkloadCluster(ctx, cluster.Namespace, cluster.Name).GetClient()
	nodes := &corev1.NodeList{}
	Expect(c.List(ctx, nodes)).To(Succeed(), "list the Nodes of %s", cluster.Name)
	Expect(nodes.Items).ToNot(BeEmpty(), "%s has no Nodes", cluster.Name)
	var names []string
	for _, n := range nodes.Items {
		va := &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "capd-e2e-" + n.Name, Finalizers: []string{VolumeAttachmentFinalizer}},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "manual",
				NodeName: n.Name,
				Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("capd-e2e-" + n.Name)},
			},
		}
		Expect(c.Create(ctx, va)).To(Succeed(), "create VolumeAttachment %s", va.Name)
		va.Status.Attached = true
		Expect(c.Status().Update(ctx, va)).To(Succeed(), "mark VolumeAttachment %s attached", va.Name)
		names = append(names, va.Name)
	}
	fmt.Fprintf(GinkgoWriter, "VolumeAttachments that block the Machines' deletion: %s\n", strings.Join(names, ", "))
}
