package data_test

import (
	"encoding/json"
	"os"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster/patches/inline"
	capiwebhooks "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/feature"
)

// The class's patches that edit the control plane, applied to its
// KubeadmControlPlaneTemplate by Cluster API's own inline patch generator
// (the one the topology controller runs), with the variables a Cluster
// would set. The rendering tests above decode the class but apply none of
// its patches.
var _ = Describe("ClusterClass quick-start's control-plane patches", func() {
	var (
		class    *clusterv1.ClusterClass
		template *controlplanev1.KubeadmControlPlaneTemplate
	)
	BeforeEach(func() {
		raw, err := os.ReadFile("clusterclass-quick-start.yaml")
		Expect(err).ToNot(HaveOccurred())
		objs := decodeStrict(raw)
		class = find[*clusterv1.ClusterClass](objs, "quick-start")
		template = find[*controlplanev1.KubeadmControlPlaneTemplate](objs, class.Spec.ControlPlane.TemplateRef.Name)
	})

	// patched applies the class's patches named names, in the class's
	// order, to the control plane's template with the given variables; a
	// patch not enabled for them leaves the template as it is.
	patched := func(ctx SpecContext, variables map[string]string, names ...string) *controlplanev1.KubeadmControlPlaneTemplate {
		obj := template.DeepCopy()
		obj.SetGroupVersionKind(controlplanev1.GroupVersion.WithKind("KubeadmControlPlaneTemplate"))
		raw, err := json.Marshal(obj)
		Expect(err).ToNot(HaveOccurred())
		found := 0
		for i := range class.Spec.Patches {
			patch := &class.Spec.Patches[i]
			if !slices.Contains(names, patch.Name) {
				continue
			}
			found++
			current := &controlplanev1.KubeadmControlPlaneTemplate{}
			Expect(json.Unmarshal(raw, current)).To(Succeed())
			req := &runtimehooksv1.GeneratePatchesRequest{Items: []runtimehooksv1.GeneratePatchesRequestItem{{
				UID:             "control-plane",
				HolderReference: runtimehooksv1.HolderReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", FieldPath: "spec.controlPlaneRef"},
				Object:          runtime.RawExtension{Object: current, Raw: raw},
			}}}
			for k, v := range variables {
				req.Variables = append(req.Variables, runtimehooksv1.Variable{Name: k, Value: apiextensionsv1.JSON{Raw: []byte(v)}})
			}
			resp, err := inline.NewGenerator(patch).Generate(ctx, nil, req)
			Expect(err).ToNot(HaveOccurred(), "patch %s", patch.Name)
			for _, item := range resp.Items {
				p, err := jsonpatch.DecodePatch(item.Patch)
				Expect(err).ToNot(HaveOccurred())
				raw, err = p.Apply(raw)
				Expect(err).ToNot(HaveOccurred(), "patch %s: %s", patch.Name, item.Patch)
			}
		}
		Expect(found).To(Equal(len(names)), "the class's patches named %v", names)
		out := &controlplanev1.KubeadmControlPlaneTemplate{}
		Expect(json.Unmarshal(raw, out)).To(Succeed())
		out.SetGroupVersionKind(template.GroupVersionKind())
		return out
	}
	argNames := func(args []bootstrapv1.Arg) []string {
		var names []string
		for _, a := range args {
			names = append(names, a.Name)
		}
		return names
	}

	It("passes Cluster API's ClusterClass webhook", func(ctx SpecContext) {
		Expect(feature.MutableGates.Set("ClusterTopology=true")).To(Succeed())
		_, err := (&capiwebhooks.ClusterClass{}).ValidateCreate(ctx, class)
		Expect(err).ToNot(HaveOccurred())
	})

	nodeRegistrations := func(t *controlplanev1.KubeadmControlPlaneTemplate) map[string]bootstrapv1.NodeRegistrationOptions {
		spec := t.Spec.Template.Spec.KubeadmConfigSpec
		return map[string]bootstrapv1.NodeRegistrationOptions{"init": spec.InitConfiguration.NodeRegistration, "join": spec.JoinConfiguration.NodeRegistration}
	}
	taintPatches := []string{"controlPlaneTaint", "noControlPlaneTaint"}

	It("registers control-plane nodes with their taint by default", func(ctx SpecContext) {
		out := patched(ctx, map[string]string{"controlPlaneTaint": "true"}, taintPatches...)
		before := nodeRegistrations(template)
		for phase, nr := range nodeRegistrations(out) {
			Expect(nr.KubeletExtraArgs).To(Equal(append(slices.Clone(before[phase].KubeletExtraArgs),
				bootstrapv1.Arg{Name: "register-with-taints", Value: ptr.To("node-role.kubernetes.io/control-plane:NoSchedule")})), phase)
			Expect(nr.Taints).To(BeNil(), "%s: kubeadm's default taint", phase)
		}
	})

	It("leaves every control-plane taint out when controlPlaneTaint is false", func(ctx SpecContext) {
		out := patched(ctx, map[string]string{"controlPlaneTaint": "false"}, taintPatches...)
		before := nodeRegistrations(template)
		for phase, nr := range nodeRegistrations(out) {
			Expect(nr.KubeletExtraArgs).To(Equal(before[phase].KubeletExtraArgs), phase)
			Expect(argNames(nr.KubeletExtraArgs)).ToNot(ContainElement("register-with-taints"), phase)
			Expect(nr.Taints).ToNot(BeNil(), "%s: an empty list, so that kubeadm adds no taint of its own", phase)
			Expect(*nr.Taints).To(BeEmpty(), phase)
		}
	})

	It("leaves the rollout to KCP's default when kubeadmControlPlaneMaxSurge is empty", func(ctx SpecContext) {
		out := patched(ctx, map[string]string{"kubeadmControlPlaneMaxSurge": `""`}, "kubeadmControlPlaneMaxSurge")
		Expect(out.Spec).To(Equal(template.Spec))
	})

	It("advertises the API server's IPv6 address only with ipv6Primary", func(ctx SpecContext) {
		out := patched(ctx, map[string]string{"ipv6Primary": "true"}, "ipv6Primary")
		Expect(out.Spec.Template.Spec.KubeadmConfigSpec.InitConfiguration.LocalAPIEndpoint.AdvertiseAddress).To(Equal("::"))
		Expect(patched(ctx, map[string]string{"ipv6Primary": "false"}, "ipv6Primary").Spec).To(Equal(template.Spec))
	})

	DescribeTable("sets the control plane's maxSurge from kubeadmControlPlaneMaxSurge",
		func(ctx SpecContext, value string, want intstr.IntOrString) {
			out := patched(ctx, map[string]string{"kubeadmControlPlaneMaxSurge": value}, "kubeadmControlPlaneMaxSurge")
			strategy := out.Spec.Template.Spec.Rollout.Strategy
			Expect(strategy.Type).To(Equal(controlplanev1.RollingUpdateStrategyType))
			Expect(strategy.RollingUpdate.MaxSurge).To(HaveValue(Equal(want)))
		},
		Entry("a count, as an integer (KCP rejects a string without %)", `"0"`, intstr.FromInt32(0)),
		Entry("a percentage, as a string", `"50%"`, intstr.FromString("50%")),
	)
})
