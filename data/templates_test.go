package data_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
)

// The templates are rendered with upstream's own machinery, which reports
// through Gomega and Ginkgo: hence a Ginkgo suite inside `go test`.
func TestTemplates(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CAPD cluster templates")
}

const (
	configFile          = "../config/e2e.yaml"
	dockerVersion       = "v1.14.2"
	clusterName         = "c1"
	namespace           = "templates-test"
	cpCount       int64 = 3
	workerCount   int64 = 2
)

// A stand-in CNI manifest: two documents, indentation, a trailing newline;
// what matters is that it lands in the ConfigMap byte for byte.
const cniManifest = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-router
  namespace: kube-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-router
  namespace: kube-system
spec:
  template:
    spec:
      containers:
      - name: kube-router
        args: ["--run-router=true", "--bgp-graceful-restart=true"]
`

// The dual-stack flavors' stand-in CNI manifest (CNI_RESOURCES_DUALSTACK):
// another text, so a flavor naming the wrong placeholder shows.
const cniDualStackManifest = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-router-dualstack
  namespace: kube-system
`

// The ipv6 flavor's stand-in CNI manifest (CNI_RESOURCES_IPV6).
const cniIPv6Manifest = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-router-ipv6
  namespace: kube-system
`

type flavor struct {
	name string // clusterctl flavor; "" is the default one
	file string
	// kinds maps each kind to how many objects of it the template has.
	kinds map[string]int
	// variables are passed the way a spec passes ClusterctlVariables.
	variables map[string]string
	// topology: the Cluster is of a ClusterClass (checkTopology instead of
	// checkCommon).
	topology bool
	// dualStack: "ipv4" or "ipv6", a dual-stack Cluster of the ClusterClass
	// whose first ranges are of that family (checkTopology checks them).
	dualStack string
	// ipv6: an IPv6-only Cluster of the classic objects (checkCommon
	// checks its ranges and CNI).
	ipv6 bool
	// noWorkers: a Cluster of a ClusterClass without workers
	// (checkTopology checks there are none).
	noWorkers bool
	// custom: check alone checks the objects (neither checkCommon nor
	// checkTopology).
	custom bool
	check  func(objs []client.Object, vars map[string]string)
}

// classFiles are the ClusterClasses of this folder.
var classFiles = []string{"clusterclass-in-memory.yaml", "clusterclass-quick-start-runtimesdk.yaml", "clusterclass-quick-start.yaml"}

func baseKinds(extra map[string]int) map[string]int {
	k := map[string]int{
		"Cluster": 1, "DevCluster": 1, "KubeadmControlPlane": 1, "DevMachineTemplate": 2,
		"KubeadmConfigTemplate": 1, "MachineDeployment": 1, "ConfigMap": 1, "ClusterResourceSet": 1,
	}
	for kind, n := range extra {
		k[kind] = n
	}
	return k
}

// topologyKinds are the objects of a flavor whose Cluster is of the
// quick-start ClusterClass: the Cluster, the class with its templates, and
// the CNI's ConfigMap and ClusterResourceSet.
var topologyKinds = map[string]int{
	"Cluster": 1, "ClusterClass": 1, "DevClusterTemplate": 1, "KubeadmControlPlaneTemplate": 1,
	"DevMachineTemplate": 2, "DevMachinePoolTemplate": 1, "KubeadmConfigTemplate": 2,
	"ConfigMap": 1, "ClusterResourceSet": 1,
}

// upstreamTaints are the Machine taints upstream's
// KCPAndMachineDeploymentRolloutSpec and ClusterClassRolloutSpec expect,
// exactly, on the control plane's and md-0's Machines: the kcp-md-taints
// and topology-taints flavors declare them.
var upstreamTaints = []clusterv1.MachineTaint{
	{Key: "pre-existing-on-initialization-taint", Value: "on-initialization-value", Effect: corev1.TaintEffectPreferNoSchedule, Propagation: clusterv1.MachineTaintPropagationOnInitialization},
	{Key: "pre-existing-always-taint", Value: "always-value", Effect: corev1.TaintEffectPreferNoSchedule, Propagation: clusterv1.MachineTaintPropagationAlways},
}

// inMemoryKinds are the objects of a flavor whose Cluster is of the
// in-memory ClusterClass: the Cluster and the class with its templates;
// no CNI (nothing runs).
var inMemoryKinds = map[string]int{
	"Cluster": 1, "ClusterClass": 1, "DevClusterTemplate": 1, "KubeadmControlPlaneTemplate": 1,
	"DevMachineTemplate": 2, "KubeadmConfigTemplate": 1,
}

// checkInMemory checks a flavor of the in-memory ClusterClass: every
// template on the in-memory backend, the class's patches and upgrade plan
// from the extension registered as extensionConfig, and the counts and
// version clusterctl was given.
func checkInMemory(extensionConfig string) func(objs []client.Object, vars map[string]string) {
	return func(objs []client.Object, vars map[string]string) {
		cluster := find[*clusterv1.Cluster](objs, clusterName)
		Expect(cluster.Spec.Topology.ClassRef.Name).To(Equal("in-memory"))
		Expect(cluster.Spec.Topology.ClassRef.Namespace).To(Equal(namespace))
		Expect(cluster.Spec.Topology.Version).To(Equal(vars["KUBERNETES_VERSION"]))
		Expect(cluster.Spec.Topology.ControlPlane.Replicas).To(HaveValue(Equal(int32(cpCount))))
		Expect(cluster.Spec.Topology.Workers.MachineDeployments).To(ConsistOf(SatisfyAll(
			HaveField("Name", "md-0"), HaveField("Class", "default-worker"), HaveField("Replicas", HaveValue(Equal(int32(workerCount)))))))
		class := find[*clusterv1.ClusterClass](objs, "in-memory")
		Expect(class.Spec.Patches).To(ConsistOf(HaveField("External", SatisfyAll(
			HaveField("GeneratePatchesExtension", Equal("generate-patches."+extensionConfig)),
			HaveField("DiscoverVariablesExtension", Equal("discover-variables."+extensionConfig))))))
		Expect(class.Spec.Upgrade.External.GenerateUpgradePlanExtension).To(Equal("generate-upgrade-plan." + extensionConfig))
		dc := find[*infrav1.DevClusterTemplate](objs, class.Spec.Infrastructure.TemplateRef.Name)
		Expect(dc.Spec.Template.Spec.Backend.InMemory).ToNot(BeNil())
		Expect(dc.Spec.Template.Spec.Backend.Docker).To(BeNil())
		for _, name := range []string{class.Spec.ControlPlane.MachineInfrastructure.TemplateRef.Name, class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.Name} {
			dmt := find[*infrav1.DevMachineTemplate](objs, name)
			Expect(dmt.Spec.Template.Spec.Backend.InMemory).ToNot(BeNil(), "template %s", name)
			Expect(dmt.Spec.Template.Spec.Backend.Docker).To(BeNil(), "template %s", name)
		}
	}
}

var flavors = []flavor{
	{name: "in-memory-scale", file: "cluster-template-in-memory-scale.yaml", custom: true, kinds: inMemoryKinds, check: checkInMemory("scale")},
	{
		name: "in-memory-topology", file: "cluster-template-in-memory-topology.yaml", custom: true, kinds: inMemoryKinds,
		// As upstream's ClusterInPlaceUpdateSpec renders it.
		variables: map[string]string{"EXTENSION_CONFIG_NAME": "in-place-update", "KUBEADM_CONTROL_PLANE_MAX_SURGE": "0", "MD_MAX_SURGE": "1", "MD_MAX_UNAVAILABLE": "1"},
		check: func(objs []client.Object, vars map[string]string) {
			checkInMemory("in-place-update")(objs, vars)
			topology := find[*clusterv1.Cluster](objs, clusterName).Spec.Topology
			Expect(topology.ControlPlane.Taints).To(Equal(upstreamTaints))
			md := topology.Workers.MachineDeployments[0]
			Expect(md.Taints).To(Equal(upstreamTaints))
			Expect(md.Rollout.Strategy.RollingUpdate.MaxSurge).To(HaveValue(Equal(intstr.FromInt32(1))))
			Expect(md.Rollout.Strategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))))
			Expect(topology.Variables).To(ContainElement(SatisfyAll(
				HaveField("Name", "kubeadmControlPlaneMaxSurge"), HaveField("Value.Raw", BeEquivalentTo(`"0"`)))))
		},
	},
	{name: "", file: "cluster-template.yaml", kinds: baseKinds(nil)},
	{name: "ipv6", file: "cluster-template-ipv6.yaml", kinds: baseKinds(map[string]int{"ConfigMap": 2}), ipv6: true, check: checkIPv6},
	{
		name: "ignition", file: "cluster-template-ignition.yaml", kinds: baseKinds(nil),
		check: func(objs []client.Object, _ map[string]string) {
			kcp := find[*controlplanev1.KubeadmControlPlane](objs, clusterName+"-control-plane")
			Expect(kcp.Spec.KubeadmConfigSpec.Format).To(Equal(bootstrapv1.Ignition))
			const containerd = "unix:///var/run/containerd/containerd.sock"
			Expect(kcp.Spec.KubeadmConfigSpec.InitConfiguration.NodeRegistration.CRISocket).To(Equal(containerd))
			Expect(kcp.Spec.KubeadmConfigSpec.JoinConfiguration.NodeRegistration.CRISocket).To(Equal(containerd))
			kct := find[*bootstrapv1.KubeadmConfigTemplate](objs, clusterName+"-md-0").Spec.Template.Spec
			Expect(kct.Format).To(Equal(bootstrapv1.Ignition))
			Expect(kct.JoinConfiguration.NodeRegistration.CRISocket).To(Equal(containerd))
			// What the quick-start's Ignition check reads on each worker.
			Expect(kct.Ignition.ContainerLinuxConfig.AdditionalConfig).To(And(
				ContainSubstring("path: /opt/foo"), ContainSubstring("inline: Howdy!")))
		},
	},
	{
		name: "kcp-md-taints", file: "cluster-template-kcp-md-taints.yaml", kinds: baseKinds(nil),
		check: func(objs []client.Object, _ map[string]string) {
			Expect(find[*controlplanev1.KubeadmControlPlane](objs, clusterName+"-control-plane").Spec.MachineTemplate.Spec.Taints).To(Equal(upstreamTaints))
			Expect(find[*clusterv1.MachineDeployment](objs, clusterName+"-md-0").Spec.Template.Spec.Taints).To(Equal(upstreamTaints))
		},
	},
	{
		name: "upgrades", file: "cluster-template-upgrades.yaml",
		kinds: baseKinds(map[string]int{"DevMachineTemplate": 4}),
		check: func(objs []client.Object, vars map[string]string) {
			to := "kindest/node:" + vars["KUBERNETES_VERSION_UPGRADE_TO"]
			for _, n := range []string{clusterName + "-control-plane-upgrade-to", clusterName + "-md-0-upgrade-to"} {
				dmt := find[*infrav1.DevMachineTemplate](objs, n)
				Expect(dmt.Spec.Template.Spec.Backend.Docker.CustomImage).To(Equal(to), "template %s", n)
			}
		},
	},
	{
		name: "md-remediation", file: "cluster-template-md-remediation.yaml",
		kinds: baseKinds(map[string]int{"MachineHealthCheck": 1}),
		check: func(objs []client.Object, _ map[string]string) {
			mhc := find[*clusterv1.MachineHealthCheck](objs, clusterName+"-mhc-0")
			md := find[*clusterv1.MachineDeployment](objs, clusterName+"-md-0")
			Expect(md.Spec.Template.Labels).To(HaveKeyWithValue("e2e.remediation.label", ""))
			Expect(mhc.Spec.Selector.MatchLabels).To(Equal(map[string]string{"e2e.remediation.label": ""}))
			checkMHC(mhc)
		},
	},
	{
		name: "kcp-remediation", file: "cluster-template-kcp-remediation.yaml",
		kinds: baseKinds(map[string]int{"MachineHealthCheck": 1}),
		check: func(objs []client.Object, _ map[string]string) {
			mhc := find[*clusterv1.MachineHealthCheck](objs, clusterName+"-mhc-0")
			Expect(mhc.Spec.Selector.MatchLabels).To(Equal(map[string]string{clusterv1.MachineControlPlaneLabel: ""}))
			checkMHC(mhc)
		},
	},
	{
		name: "kcp-remediation-bootstrap", file: "cluster-template-kcp-remediation-bootstrap.yaml",
		kinds:     baseKinds(map[string]int{"MachineHealthCheck": 1}),
		variables: map[string]string{"TOKEN": "a-token", "SERVER": "https://mgmt-control-plane:6443"},
		check: func(objs []client.Object, _ map[string]string) {
			mhc := find[*clusterv1.MachineHealthCheck](objs, clusterName+"-mhc-0")
			Expect(mhc.Spec.Selector.MatchLabels).To(Equal(map[string]string{clusterv1.MachineControlPlaneLabel: "", "mhc-test": "fail"}))
			Expect(mhc.Spec.Checks.NodeStartupTimeoutSeconds).To(HaveValue(BeEquivalentTo(30)))
			spec := find[*controlplanev1.KubeadmControlPlane](objs, clusterName+"-control-plane").Spec.KubeadmConfigSpec
			Expect(spec.PreKubeadmCommands).To(Equal([]string{`/wait-signal.sh "a-token" "https://mgmt-control-plane:6443" "` + namespace + `"`}))
			Expect(spec.Files).To(ConsistOf(SatisfyAll(HaveField("Path", "/wait-signal.sh"), HaveField("Permissions", "0755"),
				// clusterctl substitutes ${...} only: the script's own
				// shell variables are left to the shell.
				HaveField("Content", ContainSubstring(`if [ "$signal" == "pass" ]`)))))
		},
	},
	{
		name: "kcp-adoption", file: "cluster-template-kcp-adoption.yaml", custom: true,
		kinds: map[string]int{
			"Cluster": 2, "DevCluster": 1, "DevMachine": 1, "KubeadmConfig": 1, "Machine": 1, "ConfigMap": 1,
			"ClusterResourceSet": 1, "DevMachineTemplate": 1, "KubeadmControlPlane": 1,
		},
		check: checkKCPAdoption,
	},
	{
		name: "machine-pool", file: "cluster-template-machine-pool.yaml",
		kinds: map[string]int{
			"Cluster": 1, "DevCluster": 1, "KubeadmControlPlane": 1, "DevMachineTemplate": 1,
			"MachinePool": 1, "DevMachinePool": 1, "KubeadmConfig": 1, "ConfigMap": 1, "ClusterResourceSet": 1,
		},
	},
	{
		name: "topology", file: "cluster-template-topology.yaml", topology: true,
		kinds: topologyKinds,
	},
	{
		name: "topology-taints", file: "cluster-template-topology-taints.yaml", topology: true,
		kinds: topologyKinds,
		check: func(objs []client.Object, _ map[string]string) {
			topology := find[*clusterv1.Cluster](objs, clusterName).Spec.Topology
			Expect(topology.ControlPlane.Taints).To(Equal(upstreamTaints))
			Expect(topology.Workers.MachineDeployments).To(HaveLen(1))
			Expect(topology.Workers.MachineDeployments[0].Taints).To(Equal(upstreamTaints))
		},
	},
	{
		name: "topology-kubeadm-version", file: "cluster-template-topology-kubeadm-version.yaml", custom: true,
		kinds: map[string]int{
			"Cluster": 1, "ClusterClass": 1, "DevClusterTemplate": 1, "KubeadmControlPlaneTemplate": 1,
			"DevMachineTemplate": 2, "KubeadmConfigTemplate": 1, "ConfigMap": 1, "ClusterResourceSet": 1,
		},
		// As upstream's KubeadmJoinOldNodesSpec renders it, with the folder
		// setup sets.
		variables: map[string]string{"EXTENSION_CONFIG_NAME": "kubeadm-join-old-nodes", "KUBEADM_BINARIES_DIR": "/tmp/capd-e2e-run-kubeadm-1"},
		check:     checkKubeadmVersion,
	},
	{name: "topology-dualstack-ipv4-primary", file: "cluster-template-topology-dualstack-ipv4-primary.yaml", topology: true, dualStack: "ipv4", kinds: topologyKinds},
	{name: "topology-dualstack-ipv6-primary", file: "cluster-template-topology-dualstack-ipv6-primary.yaml", topology: true, dualStack: "ipv6", kinds: topologyKinds},
	{
		name: "topology-kcp-only", file: "cluster-template-topology-kcp-only.yaml", topology: true, noWorkers: true,
		kinds: topologyKinds,
	},
	{
		name: "topology-self-hosted", file: "cluster-template-topology-self-hosted.yaml", topology: true,
		kinds:     topologyKinds,
		variables: map[string]string{"DOCKER_PRELOAD_IMAGES": `["registry.k8s.io/cluster-api/capd-manager:v1.14.2"]`},
	},
	{
		name: "kcp-scale-in", file: "cluster-template-kcp-scale-in.yaml", topology: true,
		kinds: topologyKinds,
		check: func(objs []client.Object, _ map[string]string) {
			cluster := find[*clusterv1.Cluster](objs, clusterName)
			Expect(cluster.Spec.Topology.Variables).To(ContainElement(SatisfyAll(
				HaveField("Name", "kubeadmControlPlaneMaxSurge"), HaveField("Value.Raw", BeEquivalentTo(`"0"`)))))
		},
	},
	{
		name: "kcp-pre-drain", file: "cluster-template-kcp-pre-drain.yaml", topology: true,
		kinds: topologyKinds,
		check: func(objs []client.Object, _ map[string]string) {
			cluster := find[*clusterv1.Cluster](objs, clusterName)
			Expect(cluster.Spec.Topology.ControlPlane.Metadata.Annotations).To(HaveKeyWithValue("pre-drain.delete.hook.machine.cluster.x-k8s.io/kcp-ready-check", "true"))
		},
	},
	{
		name: "topology-self-hosted-no-workers", file: "cluster-template-topology-self-hosted-no-workers.yaml", topology: true, noWorkers: true,
		kinds:     topologyKinds,
		variables: map[string]string{"DOCKER_PRELOAD_IMAGES": `["registry.k8s.io/cluster-api/capd-manager:v1.14.2"]`},
		check: func(objs []client.Object, _ map[string]string) {
			// Its only node runs the controllers: no control-plane taint.
			cluster := find[*clusterv1.Cluster](objs, clusterName)
			Expect(cluster.Spec.Topology.Variables).To(ContainElement(SatisfyAll(
				HaveField("Name", "controlPlaneTaint"), HaveField("Value.Raw", BeEquivalentTo("false")))))
		},
	},
	{
		name: "self-hosted", file: "cluster-template-self-hosted.yaml",
		kinds:     baseKinds(nil),
		variables: map[string]string{"DOCKER_PRELOAD_IMAGES": `["registry.k8s.io/cluster-api/capd-manager:v1.14.2","capd-e2e/cert-manager-substitute:v1.21.2"]`},
		check: func(objs []client.Object, _ map[string]string) {
			for _, n := range []string{clusterName + "-control-plane", clusterName + "-md-0"} {
				dmt := find[*infrav1.DevMachineTemplate](objs, n)
				Expect(dmt.Spec.Template.Spec.Backend.Docker.ExtraMounts).To(ContainElement(infrav1.Mount{ContainerPath: "/var/run/docker.sock", HostPath: "/var/run/docker.sock"}), "template %s", n)
				Expect(dmt.Spec.Template.Spec.Backend.Docker.PreLoadImages).To(Equal([]string{"registry.k8s.io/cluster-api/capd-manager:v1.14.2", "capd-e2e/cert-manager-substitute:v1.21.2"}), "template %s", n)
			}
		},
	},
	{
		// On Podman the suite sets CONTAINER_ENGINE_SOCKET to its service's
		// socket: the machines mount that one.
		name: "self-hosted", file: "cluster-template-self-hosted.yaml",
		kinds:     baseKinds(nil),
		variables: map[string]string{"CONTAINER_ENGINE_SOCKET": "/run/podman/podman.sock", "NODE_IMAGE_REPOSITORY": "docker.io/kindest/node"},
		check: func(objs []client.Object, vars map[string]string) {
			for _, n := range []string{clusterName + "-control-plane", clusterName + "-md-0"} {
				dmt := find[*infrav1.DevMachineTemplate](objs, n)
				Expect(dmt.Spec.Template.Spec.Backend.Docker.ExtraMounts).To(ConsistOf(infrav1.Mount{ContainerPath: "/var/run/docker.sock", HostPath: "/run/podman/podman.sock"}), "template %s", n)
				Expect(dmt.Spec.Template.Spec.Backend.Docker.CustomImage).To(HavePrefix("docker.io/kindest/node:"), "template %s", n)
			}
		},
	},
}

// checkKCPAdoption checks what the kcp-adoption spec relies on: every
// object is of exactly one of its two steps; the first step's Cluster has
// no control plane and the second's names the KubeadmControlPlane and is
// otherwise the same; the standalone Machine's KubeadmConfig is what the
// KubeadmControlPlane would make for its first Machine (its init and
// cluster configuration, no join configuration), without which the
// KubeadmControlPlane would replace the Machine rather than adopt it; the
// Machine runs the version and node image the KubeadmControlPlane's would.
func checkKCPAdoption(objs []client.Object, vars map[string]string) {
	steps := map[string][]string{}
	var clusters []*clusterv1.Cluster
	for _, o := range objs {
		_, one := o.GetLabels()["kcp-adoption.step1"]
		_, two := o.GetLabels()["kcp-adoption.step2"]
		Expect(one != two).To(BeTrue(), "%T %s must be of exactly one step", o, o.GetName())
		step := "step1"
		if two {
			step = "step2"
		}
		steps[step] = append(steps[step], o.GetObjectKind().GroupVersionKind().Kind)
		if c, ok := o.(*clusterv1.Cluster); ok {
			clusters = append(clusters, c)
		}
	}
	Expect(steps["step1"]).To(ConsistOf("Cluster", "DevCluster", "DevMachine", "KubeadmConfig", "Machine", "ConfigMap", "ClusterResourceSet"))
	Expect(steps["step2"]).To(ConsistOf("Cluster", "DevMachineTemplate", "KubeadmControlPlane"))
	Expect(clusters).To(HaveLen(2))
	first, second := clusters[0], clusters[1]
	Expect(first.Spec.ControlPlaneRef.IsDefined()).To(BeFalse(), "the first step's Cluster has no control plane")
	Expect(second.Spec.ControlPlaneRef).To(Equal(clusterv1.ContractVersionedObjectReference{
		APIGroup: controlplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane", Name: clusterName + "-control-plane",
	}))
	afterAdoption := first.Spec.DeepCopy()
	afterAdoption.ControlPlaneRef = second.Spec.ControlPlaneRef
	Expect(second.Spec).To(Equal(*afterAdoption), "the second step changes only the Cluster's control plane reference")
	Expect(second.Labels["cni"]).To(Equal(first.Labels["cni"]))

	kcp := find[*controlplanev1.KubeadmControlPlane](objs, clusterName+"-control-plane")
	machine := find[*clusterv1.Machine](objs, clusterName+"-control-plane-0")
	kc := find[*bootstrapv1.KubeadmConfig](objs, machine.Spec.Bootstrap.ConfigRef.Name)
	dm := find[*infrav1.DevMachine](objs, machine.Spec.InfrastructureRef.Name)
	dmt := find[*infrav1.DevMachineTemplate](objs, kcp.Spec.MachineTemplate.Spec.InfrastructureRef.Name)
	Expect(kc.Spec.ClusterConfiguration).To(Equal(kcp.Spec.KubeadmConfigSpec.ClusterConfiguration))
	Expect(kc.Spec.InitConfiguration).To(Equal(kcp.Spec.KubeadmConfigSpec.InitConfiguration))
	Expect(kc.Spec.JoinConfiguration).To(BeZero(), "the first control-plane Machine's KubeadmConfig has no join configuration")
	Expect(machine.Spec.Version).To(Equal(kcp.Spec.Version))
	Expect(machine.Spec.Version).To(Equal(vars["KUBERNETES_VERSION"]))
	Expect(machine.Labels).To(HaveKey(clusterv1.MachineControlPlaneLabel))
	Expect(dm.Spec.Backend.Docker.CustomImage).To(Equal(dmt.Spec.Template.Spec.Backend.Docker.CustomImage))
	Expect(dm.Spec.Backend.Docker.CustomImage).To(Or(Equal("kindest/node:"+machine.Spec.Version), Equal("docker.io/kindest/node:"+machine.Spec.Version)))
	cloud := ptr.To(vars["DOCKER_CLOUD_PROVIDER"])
	checkArg(kcp.Spec.KubeadmConfigSpec.ClusterConfiguration.ControllerManager.ExtraArgs, "cloud-provider", cloud)
	checkNodeRegistration(kcp.Spec.KubeadmConfigSpec.InitConfiguration.NodeRegistration, cloud)
	checkNodeRegistration(kcp.Spec.KubeadmConfigSpec.JoinConfiguration.NodeRegistration, cloud)

	crs := find[*addonsv1.ClusterResourceSet](objs, clusterName+"-crs-0")
	Expect(crs.Spec.ClusterSelector.MatchLabels).To(Equal(map[string]string{"cni": first.Labels["cni"]}))
	cm := find[*corev1.ConfigMap](objs, crs.Spec.Resources[0].Name)
	Expect(cm.Data).To(Equal(map[string]string{"resources": cniManifest}), "the CNI manifest, byte for byte")
}

// checkMHC checks what the machine-health-check spec relies on: a stopped
// machine (Ready=Unknown) and the fast mode's condition are both unhealthy.
func checkMHC(mhc *clusterv1.MachineHealthCheck) {
	Expect(mhc.Spec.ClusterName).To(Equal(clusterName))
	Expect(mhc.Spec.Checks.UnhealthyNodeConditions).To(ContainElement(clusterv1.UnhealthyNodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To[int32](30),
	}))
	Expect(mhc.Spec.Checks.UnhealthyNodeConditions).To(ContainElement(HaveField("Type", corev1.NodeConditionType("e2e.remediation.condition"))))
}

var _ = Describe("CAPD cluster templates", Ordered, func() {
	var (
		e2eConfig     *clusterctl.E2EConfig
		clusterctlCfg string
		logFolder     string
	)

	BeforeAll(func(ctx SpecContext) {
		cfg, err := config.Load(configFile)
		Expect(err).ToNot(HaveOccurred())
		full, err := upstream.E2EConfig(cfg, GinkgoT().TempDir())
		Expect(err).ToNot(HaveOccurred())

		// A repository with only the docker provider, whose components are
		// a placeholder (templates do not depend on them), and every
		// template of this folder: the rendering does not need `make
		// images` to have run.
		tmp := GinkgoT().TempDir()
		logFolder = filepath.Join(tmp, "logs")
		components := filepath.Join(tmp, "infrastructure-components.yaml")
		Expect(os.WriteFile(components, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: capd-system\n"), 0o644)).To(Succeed())
		metadata := filepath.Join(tmp, "metadata.yaml")
		Expect(os.WriteFile(metadata, []byte("apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: 1\n  minor: 14\n  contract: v1beta2\n"), 0o644)).To(Succeed())
		cni := filepath.Join(tmp, "cni.yaml")
		Expect(os.WriteFile(cni, []byte(cniManifest), 0o644)).To(Succeed())
		cniDualStack := filepath.Join(tmp, "cni-dualstack.yaml")
		Expect(os.WriteFile(cniDualStack, []byte(cniDualStackManifest), 0o644)).To(Succeed())
		cniIPv6 := filepath.Join(tmp, "cni-ipv6.yaml")
		Expect(os.WriteFile(cniIPv6, []byte(cniIPv6Manifest), 0o644)).To(Succeed())

		files := []clusterctl.Files{{SourcePath: metadata, TargetName: "metadata.yaml"}}
		for _, f := range flavors {
			if slices.ContainsFunc(files, func(c clusterctl.Files) bool { return c.TargetName == f.file }) {
				continue // a second case of the same template
			}
			abs, err := filepath.Abs(f.file)
			Expect(err).ToNot(HaveOccurred())
			files = append(files, clusterctl.Files{SourcePath: abs, TargetName: f.file})
		}
		for _, f := range classFiles {
			abs, err := filepath.Abs(f)
			Expect(err).ToNot(HaveOccurred())
			files = append(files, clusterctl.Files{SourcePath: abs, TargetName: f})
		}
		e2eConfig = full.DeepCopy()
		e2eConfig.Providers = []clusterctl.ProviderConfig{{
			Name: "docker", Type: "InfrastructureProvider",
			Versions: []clusterctl.ProviderVersionSource{{
				Name: dockerVersion, Value: components, Type: clusterctl.URLSource, Contract: "v1beta2", Files: files,
			}},
		}}
		in := clusterctl.CreateRepositoryInput{E2EConfig: e2eConfig, RepositoryFolder: filepath.Join(tmp, "repository")}
		in.RegisterClusterResourceSetConfigMapTransformation(cni, "CNI_RESOURCES")
		in.RegisterClusterResourceSetConfigMapTransformation(cniDualStack, "CNI_RESOURCES_DUALSTACK")
		in.RegisterClusterResourceSetConfigMapTransformation(cniIPv6, "CNI_RESOURCES_IPV6")
		clusterctlCfg = clusterctl.CreateRepository(ctx, in)
	})

	It("has a test case for every template in the folder", func() {
		found, err := filepath.Glob("cluster-template*.yaml")
		Expect(err).ToNot(HaveOccurred())
		var tested []string
		for _, f := range flavors {
			tested = append(tested, f.file)
		}
		Expect(found).To(ConsistOf(slices.Compact(slices.Sorted(slices.Values(tested)))))
		classes, err := filepath.Glob("clusterclass-*.yaml")
		Expect(err).ToNot(HaveOccurred())
		Expect(classes).To(ConsistOf(classFiles))
	})

	for _, f := range flavors {
		name := f.name
		if name == "" {
			name = "default"
		}
		It(fmt.Sprintf("renders the %s flavor (%s) into valid v1beta2 objects", name, f.file), func(ctx SpecContext) {
			version := e2eConfig.MustGetVariable("KUBERNETES_VERSION")
			if f.name == "upgrades" {
				version = e2eConfig.MustGetVariable("KUBERNETES_VERSION_UPGRADE_FROM")
			}
			out := clusterctl.ConfigCluster(ctx, clusterctl.ConfigClusterInput{
				LogFolder:                logFolder,
				ClusterctlConfigPath:     clusterctlCfg,
				InfrastructureProvider:   "docker:" + dockerVersion,
				Flavor:                   f.name,
				Namespace:                namespace,
				ClusterName:              clusterName,
				KubernetesVersion:        version,
				ControlPlaneMachineCount: ptr.To(cpCount),
				WorkerMachineCount:       ptr.To(workerCount),
				ClusterctlVariables:      f.variables,
			})

			Expect(regexp.MustCompile(`\$\{[^}]*\}?`).FindAll(out, -1)).To(BeEmpty(), "unresolved variables in:\n%s", out)

			objs := decodeStrict(out)
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetObjectKind().GroupVersionKind().Kind]++
				Expect(o.GetNamespace()).To(Equal(namespace), "%T %s", o, o.GetName())
			}
			Expect(kinds).To(Equal(f.kinds))

			vars := map[string]string{
				"KUBERNETES_VERSION":            version,
				"KUBERNETES_VERSION_UPGRADE_TO": e2eConfig.MustGetVariable("KUBERNETES_VERSION_UPGRADE_TO"),
				"DOCKER_CLOUD_PROVIDER":         e2eConfig.MustGetVariable("DOCKER_CLOUD_PROVIDER"),
			}
			switch {
			case f.custom:
			case f.topology:
				checkTopology(objs, version, e2eConfig, !f.noWorkers, f.dualStack)
			default:
				checkCommon(objs, version, e2eConfig, f.ipv6)
			}
			if f.check != nil {
				f.check(objs, vars)
			}
		})
	}
})

// Separate from the Ordered container above so that a config not yet
// pointing here does not hide what the rendering tests find.
var _ = Describe("config/e2e.yaml", func() {
	It("are all listed, from this folder, by the built-in docker provider", func() {
		cfg, err := config.Load(configFile)
		Expect(err).ToNot(HaveOccurred())
		providers, err := cfg.RepositoryProviders(GinkgoT().TempDir())
		Expect(err).ToNot(HaveOccurred())
		var listed []string
		for _, p := range providers {
			if p.Name != "docker" || p.Type != config.InfrastructureProvider {
				continue
			}
			for _, v := range p.Versions {
				for _, f := range append(slices.Clone(p.Files), v.Files...) {
					listed = append(listed, filepath.Clean(f.SourcePath))
				}
			}
		}
		for _, f := range flavors {
			abs, err := filepath.Abs(f.file)
			Expect(err).ToNot(HaveOccurred())
			Expect(listed).To(ContainElement(abs), "the docker provider's files must include %s", abs)
		}
		for _, f := range classFiles {
			abs, err := filepath.Abs(f)
			Expect(err).ToNot(HaveOccurred())
			Expect(listed).To(ContainElement(abs), "the docker provider's files must include the ClusterClass %s", abs)
		}
	})
})

// checkCommon checks what every flavor shares: the counts and version
// clusterctl was given, the node image, the kubelet and kubeadm settings our
// hosts need, and the CNI wiring.
func checkCommon(objs []client.Object, version string, e2eConfig *clusterctl.E2EConfig, ipv6 bool) {
	cluster := find[*clusterv1.Cluster](objs, clusterName)
	Expect(cluster.Spec.InfrastructureRef).To(Equal(clusterv1.ContractVersionedObjectReference{
		APIGroup: infrav1.GroupVersion.Group, Kind: "DevCluster", Name: clusterName,
	}))
	Expect(cluster.Spec.ControlPlaneRef.Kind).To(Equal("KubeadmControlPlane"))
	pods, services, cni := "DOCKER_POD_CIDRS", "DOCKER_SERVICE_CIDRS", cniManifest
	if ipv6 {
		pods, services, cni = "DOCKER_POD_IPV6_CIDRS", "DOCKER_SERVICE_IPV6_CIDRS", cniIPv6Manifest
	}
	Expect(cluster.Spec.ClusterNetwork.Pods.CIDRBlocks).To(Equal([]string{e2eConfig.MustGetVariable(pods)}))
	Expect(cluster.Spec.ClusterNetwork.Services.CIDRBlocks).To(Equal([]string{e2eConfig.MustGetVariable(services)}))

	kcp := find[*controlplanev1.KubeadmControlPlane](objs, clusterName+"-control-plane")
	Expect(kcp.Spec.Replicas).To(Equal(ptr.To(int32(cpCount))))
	Expect(kcp.Spec.Version).To(Equal(version))
	cpTemplate := find[*infrav1.DevMachineTemplate](objs, kcp.Spec.MachineTemplate.Spec.InfrastructureRef.Name)
	// kindest/node, or docker.io/kindest/node when the suite runs on Podman
	// (NODE_IMAGE_REPOSITORY).
	Expect(cpTemplate.Spec.Template.Spec.Backend.Docker.CustomImage).To(Or(Equal("kindest/node:"+version), Equal("docker.io/kindest/node:"+version)))
	// Kubelet and kube-controller-manager run with DOCKER_CLOUD_PROVIDER as
	// --cloud-provider, except in the self-hosted flavor (the one whose
	// machines mount the engine's socket): its cluster runs without a
	// cloud-controller-manager, whose Deployment clusterctl move would not
	// move.
	var cloud *string
	if !slices.ContainsFunc(cpTemplate.Spec.Template.Spec.Backend.Docker.ExtraMounts, func(m infrav1.Mount) bool { return m.ContainerPath == "/var/run/docker.sock" }) {
		cloud = ptr.To(e2eConfig.MustGetVariable("DOCKER_CLOUD_PROVIDER"))
	}
	checkArg(kcp.Spec.KubeadmConfigSpec.ClusterConfiguration.ControllerManager.ExtraArgs, "cloud-provider", cloud)
	checkNR := checkNodeRegistration
	if kcp.Spec.KubeadmConfigSpec.Format == bootstrapv1.Ignition {
		checkNR = checkIgnitionNodeRegistration
	}
	checkNR(kcp.Spec.KubeadmConfigSpec.InitConfiguration.NodeRegistration, cloud)
	checkNR(kcp.Spec.KubeadmConfigSpec.JoinConfiguration.NodeRegistration, cloud)
	if cloud != nil {
		// With a cloud provider's taint to remove, a control-plane node
		// registers with its own taint (see the template's comment).
		taint := ptr.To("node-role.kubernetes.io/control-plane:NoSchedule")
		checkArg(kcp.Spec.KubeadmConfigSpec.InitConfiguration.NodeRegistration.KubeletExtraArgs, "register-with-taints", taint)
		checkArg(kcp.Spec.KubeadmConfigSpec.JoinConfiguration.NodeRegistration.KubeletExtraArgs, "register-with-taints", taint)
	}

	// The workers: a MachineDeployment, or (the machine-pool flavor) a
	// MachinePool.
	if !slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*clusterv1.MachinePool); return ok }) {
		md := find[*clusterv1.MachineDeployment](objs, clusterName+"-md-0")
		Expect(md.Spec.Replicas).To(Equal(ptr.To(int32(workerCount))))
		Expect(md.Spec.Template.Spec.Version).To(Equal(version))
		mdTemplate := find[*infrav1.DevMachineTemplate](objs, md.Spec.Template.Spec.InfrastructureRef.Name)
		Expect(mdTemplate.Spec.Template.Spec.Backend.Docker.CustomImage).To(Or(Equal("kindest/node:"+version), Equal("docker.io/kindest/node:"+version)))
		kct := find[*bootstrapv1.KubeadmConfigTemplate](objs, md.Spec.Template.Spec.Bootstrap.ConfigRef.Name)
		checkNR(kct.Spec.Template.Spec.JoinConfiguration.NodeRegistration, cloud)
	} else {
		mp := find[*clusterv1.MachinePool](objs, clusterName+"-mp-0")
		Expect(mp.Spec.Replicas).To(Equal(ptr.To(int32(workerCount))))
		Expect(mp.Spec.Template.Spec.Version).To(Equal(version))
		dmp := find[*infrav1.DevMachinePool](objs, mp.Spec.Template.Spec.InfrastructureRef.Name)
		Expect(dmp.Spec.Backend.Docker.CustomImage).To(Or(Equal("kindest/node:"+version), Equal("docker.io/kindest/node:"+version)))
		kc := find[*bootstrapv1.KubeadmConfig](objs, mp.Spec.Template.Spec.Bootstrap.ConfigRef.Name)
		checkNodeRegistration(kc.Spec.JoinConfiguration.NodeRegistration, cloud)
	}

	crs := find[*addonsv1.ClusterResourceSet](objs, clusterName+"-crs-0")
	Expect(crs.Spec.ClusterSelector.MatchLabels).To(Equal(map[string]string{"cni": cluster.Labels["cni"]}))
	Expect(crs.Spec.Resources).To(HaveLen(1))
	cm := find[*corev1.ConfigMap](objs, crs.Spec.Resources[0].Name)
	Expect(cm.Data).To(Equal(map[string]string{"resources": cni}), "the CNI manifest, byte for byte")
}

// checkIPv6 checks what upstream's ipv6 flavor adds: IPv6 ranges only
// (checkCommon), the load balancer's port 7777, the API server advertised
// on "::" with the IPv6 loopback among its names, and node-ip "::" on
// every kubelet.
func checkIPv6(objs []client.Object, _ map[string]string) {
	cluster := find[*clusterv1.Cluster](objs, clusterName)
	for _, cidr := range slices.Concat(cluster.Spec.ClusterNetwork.Pods.CIDRBlocks, cluster.Spec.ClusterNetwork.Services.CIDRBlocks) {
		Expect(cidr).To(ContainSubstring(":"), "an IPv6-only cluster's range %s", cidr)
	}
	dc := find[*infrav1.DevCluster](objs, clusterName)
	Expect(dc.Spec.ControlPlaneEndpoint.Port).To(BeEquivalentTo(7777))
	// The load balancer's own haproxy template: a bind haproxy 3 takes,
	// on both families, and the backends CAPD fills in.
	ref := dc.Spec.Backend.Docker.LoadBalancer.CustomHAProxyConfigTemplateRef
	Expect(ref).ToNot(BeNil(), "the ipv6 flavor's DevCluster names no haproxy template")
	lb := find[*corev1.ConfigMap](objs, ref.Name).Data["value"]
	Expect(lb).To(ContainSubstring("bind :::{{ .FrontendControlPlanePort }} v4v6\n"))
	Expect(lb).To(ContainSubstring("range $name, $server := .BackendServers"))
	Expect(lb).ToNot(ContainSubstring(";"))
	spec := find[*controlplanev1.KubeadmControlPlane](objs, clusterName+"-control-plane").Spec.KubeadmConfigSpec
	Expect(spec.InitConfiguration.LocalAPIEndpoint.AdvertiseAddress).To(Equal("::"))
	Expect(spec.ClusterConfiguration.APIServer.CertSANs).To(ContainElement("::1"))
	kct := find[*bootstrapv1.KubeadmConfigTemplate](objs, clusterName+"-md-0").Spec.Template.Spec
	for who, nr := range map[string]bootstrapv1.NodeRegistrationOptions{
		"control plane, init": spec.InitConfiguration.NodeRegistration, "control plane, join": spec.JoinConfiguration.NodeRegistration,
		"md-0": kct.JoinConfiguration.NodeRegistration,
	} {
		Expect(nr.KubeletExtraArgs).To(ContainElement(bootstrapv1.Arg{Name: "node-ip", Value: ptr.To("::")}), who)
	}
}

// checkTopology checks a Cluster of the ClusterClass quick-start: its
// topology holds what clusterctl was given and the config's cloud provider;
// every variable it sets, and every variable a patch reads, is declared by
// the class; the node image comes from each builtin version (a static one
// would outlive a topology upgrade); the templates carry the kubelet and
// kubeadm settings our hosts need.
func checkTopology(objs []client.Object, version string, e2eConfig *clusterctl.E2EConfig, workers bool, dualStack string) {
	cluster := find[*clusterv1.Cluster](objs, clusterName)
	topo := cluster.Spec.Topology
	Expect(topo.ClassRef.Name).To(Equal("quick-start"))
	Expect(topo.ClassRef.Namespace).To(Equal(namespace))
	Expect(topo.Version).To(Equal(version))
	Expect(topo.ControlPlane.Replicas).To(Equal(ptr.To(int32(cpCount))))
	if workers {
		Expect(topo.Workers.MachineDeployments).To(ConsistOf(SatisfyAll(
			HaveField("Name", "md-0"), HaveField("Class", "default-worker"), HaveField("Replicas", ptr.To(int32(workerCount))))))
		Expect(topo.Workers.MachinePools).To(ConsistOf(SatisfyAll(
			HaveField("Name", "mp-0"), HaveField("Class", "default-worker"), HaveField("Replicas", ptr.To(int32(workerCount))))))
	} else {
		Expect(topo.Workers).To(BeZero(), "a Cluster with a control plane only has no workers")
	}
	pods := []string{e2eConfig.MustGetVariable("DOCKER_POD_CIDRS")}
	services := []string{e2eConfig.MustGetVariable("DOCKER_SERVICE_CIDRS")}
	switch dualStack {
	case "ipv4":
		pods = append(pods, e2eConfig.MustGetVariable("DOCKER_POD_IPV6_CIDRS"))
		services = append(services, e2eConfig.MustGetVariable("DOCKER_SERVICE_IPV6_CIDRS"))
	case "ipv6":
		pods = []string{e2eConfig.MustGetVariable("DOCKER_POD_IPV6_CIDRS"), pods[0]}
		services = []string{e2eConfig.MustGetVariable("DOCKER_SERVICE_IPV6_CIDRS"), services[0]}
	}
	Expect(cluster.Spec.ClusterNetwork.Pods.CIDRBlocks).To(Equal(pods))
	Expect(cluster.Spec.ClusterNetwork.Services.CIDRBlocks).To(Equal(services))

	class := find[*clusterv1.ClusterClass](objs, "quick-start")
	declared := map[string]bool{}
	for _, v := range class.Spec.Variables {
		declared[v.Name] = true
	}
	set := map[string]string{}
	for _, v := range topo.Variables {
		Expect(declared).To(HaveKey(v.Name), "the Cluster sets variable %s, which the ClusterClass does not declare", v.Name)
		set[v.Name] = string(v.Value.Raw)
	}
	// The self-hosted cluster runs without a cloud provider (see
	// checkCommon) and with the engine's socket.
	if set["dockerSocket"] == "true" {
		Expect(set).To(HaveKeyWithValue("cloudProvider", `""`))
		Expect(set).To(HaveKeyWithValue("preLoadImages", `["registry.k8s.io/cluster-api/capd-manager:v1.14.2"]`))
	} else {
		Expect(set).To(HaveKeyWithValue("cloudProvider", `"`+e2eConfig.MustGetVariable("DOCKER_CLOUD_PROVIDER")+`"`))
	}
	if dualStack != "" {
		Expect(set).To(HaveKeyWithValue("ipv6Primary", strconv.FormatBool(dualStack == "ipv6")))
	} else {
		Expect(set).ToNot(HaveKey("ipv6Primary"))
	}

	// Every variable a patch reads ({{ .name }}, valueFrom.variable) is
	// declared, or builtin.
	action := regexp.MustCompile(`\{\{(.*?)\}\}`)
	field := regexp.MustCompile(`(?:^|[\s(])\.([A-Za-z][A-Za-z0-9]*)`) // the first element of .a.b.c
	used := func(where, text string) {
		for _, a := range action.FindAllStringSubmatch(text, -1) {
			for _, m := range field.FindAllStringSubmatch(a[1], -1) {
				if m[1] != "builtin" {
					Expect(declared).To(HaveKey(m[1]), "%s reads variable %s, which the ClusterClass does not declare", where, m[1])
				}
			}
		}
	}
	images := map[string]string{}
	for _, p := range class.Spec.Patches {
		used("patch "+p.Name+" enabledIf", p.EnabledIf)
		for _, d := range p.Definitions {
			for _, jp := range d.JSONPatches {
				if jp.ValueFrom == nil {
					continue // a literal value
				}
				if jp.ValueFrom.Variable != "" {
					Expect(declared).To(HaveKey(jp.ValueFrom.Variable), "patch %s reads variable %s", p.Name, jp.ValueFrom.Variable)
				}
				used("patch "+p.Name, jp.ValueFrom.Template)
				if jp.Path == "/spec/template/spec/backend/docker/customImage" {
					m := d.Selector.MatchResources
					switch {
					case ptr.Deref(m.ControlPlane, false):
						images["controlPlane"] = jp.ValueFrom.Template
					case m.MachineDeploymentClass != nil && len(m.MachineDeploymentClass.Names) > 0:
						images["machineDeployment"] = jp.ValueFrom.Template
					case m.MachinePoolClass != nil && len(m.MachinePoolClass.Names) > 0:
						images["machinePool"] = jp.ValueFrom.Template
					}
				}
			}
		}
	}
	for _, who := range []string{"controlPlane", "machineDeployment", "machinePool"} {
		Expect(images).To(HaveKeyWithValue(who, "kindest/node:{{ .builtin."+who+".version }}"),
			"the %s's node image must come from its builtin version", who)
	}

	kcpt := find[*controlplanev1.KubeadmControlPlaneTemplate](objs, class.Spec.ControlPlane.TemplateRef.Name)
	spec := kcpt.Spec.Template.Spec.KubeadmConfigSpec
	// --cloud-provider comes from the cloudProvider patch, not the
	// template; register-with-taints from the controlPlaneTaint patch
	// (clusterclass_test.go applies both taint patches).
	checkNodeRegistration(spec.InitConfiguration.NodeRegistration, nil)
	checkNodeRegistration(spec.JoinConfiguration.NodeRegistration, nil)
	kct := find[*bootstrapv1.KubeadmConfigTemplate](objs, class.Spec.Workers.MachineDeployments[0].Bootstrap.TemplateRef.Name)
	checkNodeRegistration(kct.Spec.Template.Spec.JoinConfiguration.NodeRegistration, nil)
	Expect(class.Spec.ControlPlane.HealthCheck.Checks.UnhealthyNodeConditions).To(ContainElement(clusterv1.UnhealthyNodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To[int32](30),
	}))

	crs := find[*addonsv1.ClusterResourceSet](objs, clusterName+"-crs-0")
	Expect(crs.Spec.ClusterSelector.MatchLabels).To(Equal(map[string]string{"cni": cluster.Labels["cni"]}))
	cm := find[*corev1.ConfigMap](objs, crs.Spec.Resources[0].Name)
	want := cniManifest
	if dualStack != "" {
		want = cniDualStackManifest
	}
	Expect(cm.Data).To(Equal(map[string]string{"resources": want}), "the CNI manifest, byte for byte")
}

// checkArg checks that args hold name=*want once, or no name when want is
// nil.
func checkArg(args []bootstrapv1.Arg, name string, want *string) {
	var got []bootstrapv1.Arg
	for _, a := range args {
		if a.Name == name {
			got = append(got, a)
		}
	}
	if want == nil {
		ExpectWithOffset(1, got).To(BeEmpty(), "argument %s", name)
		return
	}
	ExpectWithOffset(1, got).To(Equal([]bootstrapv1.Arg{{Name: name, Value: want}}), "argument %s", name)
}

func checkNodeRegistration(nr bootstrapv1.NodeRegistrationOptions, cloud *string) {
	checkArg(nr.KubeletExtraArgs, "cloud-provider", cloud)
	Expect(nr.KubeletExtraArgs).To(ContainElement(bootstrapv1.Arg{Name: "fail-cgroupv1", Value: ptr.To("false")}))
	Expect(nr.KubeletExtraArgs).To(ContainElement(bootstrapv1.Arg{Name: "eviction-hard", Value: ptr.To("nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%")}))
	Expect(nr.IgnorePreflightErrors).To(ContainElement("SystemVerification"))
}

// checkIgnitionNodeRegistration is checkNodeRegistration for a machine
// bootstrapped from Ignition: no preflight errors to ignore, as CAPD runs
// kubeadm with --ignore-preflight-errors=all there, and kubeadm refuses
// the two together ("don't specify individual checks if 'all' is used",
// seen in an ignition run's kubeadm.service).
func checkIgnitionNodeRegistration(nr bootstrapv1.NodeRegistrationOptions, cloud *string) {
	checkArg(nr.KubeletExtraArgs, "cloud-provider", cloud)
	Expect(nr.KubeletExtraArgs).To(ContainElement(bootstrapv1.Arg{Name: "fail-cgroupv1", Value: ptr.To("false")}))
	Expect(nr.KubeletExtraArgs).To(ContainElement(bootstrapv1.Arg{Name: "eviction-hard", Value: ptr.To("nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%")}))
	Expect(nr.IgnorePreflightErrors).To(BeEmpty())
	Expect(nr.CRISocket).To(Equal("unix:///var/run/containerd/containerd.sock"))
}

// decodeStrict decodes every document into its Go type, failing on unknown
// kinds, unknown fields and duplicate fields.
func decodeStrict(yamlDocs []byte) []client.Object {
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		corev1.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme,
		controlplanev1.AddToScheme, addonsv1.AddToScheme, infrav1.AddToScheme,
	} {
		Expect(add(scheme)).To(Succeed())
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

	var objs []client.Object
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(yamlDocs)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).ToNot(HaveOccurred())
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		Expect(err).ToNot(HaveOccurred(), "decode:\n%s", doc)
		co, ok := obj.(client.Object)
		Expect(ok).To(BeTrue(), "%s is not an object", gvk)
		objs = append(objs, co)
	}
	return objs
}

// find returns the object of type T named name.
func find[T client.Object](objs []client.Object, name string) T {
	for _, o := range objs {
		if t, ok := o.(T); ok && o.GetName() == name {
			return t
		}
	}
	var zero T
	Fail(fmt.Sprintf("no %T named %q among the rendered objects", zero, name))
	return zero
}

// checkKubeadmVersion checks the topology-kubeadm-version flavor: a
// Cluster of quick-start-runtimesdk whose patches all come from the
// extension the spec registers (and no upgrade plan from it: it knows
// only kind's mapped versions); md-0's workers mount KUBEADM_BINARIES_DIR
// and run the fetch script, rendered as a template, which installs the
// control plane version's kubeadm from there; the machines carry the
// settings our hosts need.
func checkKubeadmVersion(objs []client.Object, vars map[string]string) {
	cluster := find[*clusterv1.Cluster](objs, clusterName)
	topo := cluster.Spec.Topology
	Expect(topo.ClassRef.Name).To(Equal("quick-start-runtimesdk"))
	Expect(topo.ClassRef.Namespace).To(Equal(namespace))
	Expect(topo.Version).To(Equal(vars["KUBERNETES_VERSION"]))
	Expect(topo.ControlPlane.Replicas).To(HaveValue(Equal(int32(cpCount))))
	Expect(topo.Variables).To(ConsistOf(SatisfyAll(HaveField("Name", "imageRepository"), HaveField("Value.Raw", BeEquivalentTo(`"kindest"`)))))
	Expect(topo.Workers.MachineDeployments).To(HaveLen(1))
	md := topo.Workers.MachineDeployments[0]
	Expect(md.Name).To(Equal("md-0"))
	Expect(md.Replicas).To(HaveValue(Equal(int32(workerCount))))
	overrides := map[string]string{}
	for _, v := range md.Variables.Overrides {
		overrides[v.Name] = string(v.Value.Raw)
	}
	Expect(overrides).To(HaveKey("preKubeadmCommands"))
	Expect(overrides["preKubeadmCommands"]).To(ContainSubstring(`bash /run/cluster-api/fetch-kubeadm.sh \u003e /var/log/fetch-kubeadm.log 2\u003e\u00261`))
	var files []struct{ Path, Content, ContentFormat string }
	Expect(json.Unmarshal([]byte(overrides["files"]), &files)).To(Succeed())
	Expect(files).To(HaveLen(1))
	Expect(files[0].Path).To(Equal("/run/cluster-api/fetch-kubeadm.sh"))
	Expect(files[0].ContentFormat).To(Equal("Template"))
	// What upstream's spec reads in the machine, and our source: the
	// doubled dollar signs are single after clusterctl.
	Expect(files[0].Content).To(And(
		ContainSubstring(`version="{{ .controlPlane.version }}"`),
		ContainSubstring(`echo "fetch-kubeadm.sh: raw version from template: '$version'"`),
		ContainSubstring(`source="/capd-e2e/kubeadm/$version/kubeadm"`),
		Not(ContainSubstring("$$")), Not(ContainSubstring("dl.k8s.io"))))

	class := find[*clusterv1.ClusterClass](objs, "quick-start-runtimesdk")
	const ext = "kubeadm-join-old-nodes"
	Expect(class.Spec.Patches).To(ConsistOf(HaveField("External", SatisfyAll(
		HaveField("GeneratePatchesExtension", Equal("generate-patches."+ext)),
		HaveField("ValidateTopologyExtension", Equal("validate-topology."+ext)),
		HaveField("DiscoverVariablesExtension", Equal("discover-variables."+ext))))))
	Expect(class.Spec.Upgrade.External.GenerateUpgradePlanExtension).To(BeEmpty())
	Expect(class.Spec.Workers.MachinePools).To(BeEmpty())
	worker := find[*infrav1.DevMachineTemplate](objs, class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.Name)
	Expect(worker.Spec.Template.Spec.Backend.Docker.ExtraMounts).To(ConsistOf(infrav1.Mount{
		ContainerPath: "/capd-e2e/kubeadm", HostPath: "/tmp/capd-e2e-run-kubeadm-1", Readonly: true,
	}))
	cloud := ptr.To(vars["DOCKER_CLOUD_PROVIDER"])
	kcpt := find[*controlplanev1.KubeadmControlPlaneTemplate](objs, class.Spec.ControlPlane.TemplateRef.Name).Spec.Template.Spec.KubeadmConfigSpec
	checkArg(kcpt.ClusterConfiguration.ControllerManager.ExtraArgs, "cloud-provider", cloud)
	checkNodeRegistration(kcpt.InitConfiguration.NodeRegistration, cloud)
	checkNodeRegistration(kcpt.JoinConfiguration.NodeRegistration, cloud)
	kct := find[*bootstrapv1.KubeadmConfigTemplate](objs, class.Spec.Workers.MachineDeployments[0].Bootstrap.TemplateRef.Name)
	checkNodeRegistration(kct.Spec.Template.Spec.JoinConfiguration.NodeRegistration, cloud)
}
