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

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster/patches/inline"
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

	// patched applies the class's patch named name to the control plane's
	// template with the given variables; it returns the template unchanged
	// when the patch is not enabled for them.
	patched := func(ctx SpecContext, name string, variables map[string]string) *controlplanev1.KubeadmControlPlaneTemplate {
		var patch *clusterv1.ClusterClassPatch
		for i := range class.Spec.Patches {
			if class.Spec.Patches[i].Name == name {
				patch = &class.Spec.Patches[i]
			}
		}
		Expect(patch).ToNot(BeNil(), "the class has no patch %q", name)

		obj := template.DeepCopy()
		obj.SetGroupVersionKind(controlplanev1.GroupVersion.WithKind("KubeadmControlPlaneTemplate"))
		raw, err := json.Marshal(obj)
		Expect(err).ToNot(HaveOccurred())
		req := &runtimehooksv1.GeneratePatchesRequest{Items: []runtimehooksv1.GeneratePatchesRequestItem{{
			UID:             "control-plane",
			HolderReference: runtimehooksv1.HolderReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", FieldPath: "spec.controlPlaneRef"},
			Object:          runtime.RawExtension{Object: obj, Raw: raw},
		}}}
		for k, v := range variables {
			req.Variables = append(req.Variables, runtimehooksv1.Variable{Name: k, Value: apiextensionsv1.JSON{Raw: []byte(v)}})
		}
		resp, err := inline.NewGenerator(patch).Generate(ctx, nil, req)
		Expect(err).ToNot(HaveOccurred())
		for _, item := range resp.Items {
			p, err := jsonpatch.DecodePatch(item.Patch)
			Expect(err).ToNot(HaveOccurred())
			raw, err = p.Apply(raw)
			Expect(err).ToNot(HaveOccurred(), "patch %s", item.Patch)
		}
		out := &controlplanev1.KubeadmControlPlaneTemplate{}
		Expect(json.Unmarshal(raw, out)).To(Succeed())
		return out
	}
	argNames := func(args []bootstrapv1.Arg) []string {
		var names []string
		for _, a := range args {
			names = append(names, a.Name)
		}
		return names
	}

	It("keeps the control-plane taint by default", func(ctx SpecContext) {
		out := patched(ctx, "controlPlaneTaint", map[string]string{"controlPlaneTaint": "true"})
		Expect(out.Spec).To(Equal(template.Spec))
		spec := out.Spec.Template.Spec.KubeadmConfigSpec
		for _, nr := range []bootstrapv1.NodeRegistrationOptions{spec.InitConfiguration.NodeRegistration, spec.JoinConfiguration.NodeRegistration} {
			Expect(argNames(nr.KubeletExtraArgs)).To(ContainElement("register-with-taints"))
		}
	})

	It("removes every control-plane taint when controlPlaneTaint is false", func(ctx SpecContext) {
		out := patched(ctx, "controlPlaneTaint", map[string]string{"controlPlaneTaint": "false"})
		before := template.Spec.Template.Spec.KubeadmConfigSpec
		spec := out.Spec.Template.Spec.KubeadmConfigSpec
		for i, nr := range []bootstrapv1.NodeRegistrationOptions{spec.InitConfiguration.NodeRegistration, spec.JoinConfiguration.NodeRegistration} {
			was := []bootstrapv1.NodeRegistrationOptions{before.InitConfiguration.NodeRegistration, before.JoinConfiguration.NodeRegistration}[i]
			// Only register-with-taints goes: the patch removes it by
			// index, so an argument added before it would be removed
			// instead, and this fails.
			Expect(argNames(nr.KubeletExtraArgs)).To(Equal(slices.DeleteFunc(argNames(was.KubeletExtraArgs), func(n string) bool { return n == "register-with-taints" })))
			Expect(nr.Taints).ToNot(BeNil(), "an empty list, so that kubeadm adds no taint of its own")
			Expect(*nr.Taints).To(BeEmpty())
		}
	})

	It("leaves the rollout to KCP's default when kubeadmControlPlaneMaxSurge is empty", func(ctx SpecContext) {
		out := patched(ctx, "kubeadmControlPlaneMaxSurge", map[string]string{"kubeadmControlPlaneMaxSurge": `""`})
		Expect(out.Spec).To(Equal(template.Spec))
	})

	DescribeTable("sets the control plane's maxSurge from kubeadmControlPlaneMaxSurge",
		func(ctx SpecContext, value string, want intstr.IntOrString) {
			out := patched(ctx, "kubeadmControlPlaneMaxSurge", map[string]string{"kubeadmControlPlaneMaxSurge": value})
			strategy := out.Spec.Template.Spec.Rollout.Strategy
			Expect(strategy.Type).To(Equal(controlplanev1.RollingUpdateStrategyType))
			Expect(strategy.RollingUpdate.MaxSurge).To(HaveValue(Equal(want)))
		},
		Entry("a count, as an integer (KCP rejects a string without %)", `"0"`, intstr.FromInt32(0)),
		Entry("a percentage, as a string", `"50%"`, intstr.FromString("50%")),
	)
})
