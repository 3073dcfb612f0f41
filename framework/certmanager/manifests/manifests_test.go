package manifests

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

func TestSubstitute(t *testing.T) {
	data, err := Substitute("capd-e2e/cert-manager-substitute:v1.21.2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(data)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		if o.GetKind() != "Namespace" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" && o.GetNamespace() != Namespace {
			t.Errorf("%s %s in namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), Namespace)
		}
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	dep := objs[len(objs)-1]
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	if c["image"] != "capd-e2e/cert-manager-substitute:v1.21.2" || c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("container image %v pull policy %v", c["image"], c["imagePullPolicy"])
	}
	if hn, _, _ := unstructured.NestedBool(dep.Object, "spec", "template", "spec", "hostNetwork"); hn {
		t.Error("hostNetwork is set without Options.HostNetwork")
	}
	if _, err := Substitute("", Options{}); err == nil {
		t.Error("Substitute(\"\") did not fail")
	}
}

// TestSubstituteHostNetwork: on the node's network, on a control-plane
// node (also before it is Ready), talking to that node's API server.
func TestSubstituteHostNetwork(t *testing.T) {
	data, err := Substitute("capd-e2e/cert-manager-substitute:v1.21.2", Options{HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(data)
	if err != nil {
		t.Fatal(err)
	}
	pod, _, _ := unstructured.NestedMap(objs[len(objs)-1].Object, "spec", "template", "spec")
	if pod["hostNetwork"] != true {
		t.Errorf("hostNetwork = %v, want true", pod["hostNetwork"])
	}
	if sel, _, _ := unstructured.NestedStringMap(pod, "nodeSelector"); len(sel) != 1 || sel["node-role.kubernetes.io/control-plane"] != "" {
		t.Errorf("nodeSelector = %v, want the control-plane role only", sel)
	}
	var tolerated []string
	tols, _, _ := unstructured.NestedSlice(pod, "tolerations")
	for _, tol := range tols {
		tolerated = append(tolerated, tol.(map[string]any)["key"].(string))
	}
	if !slices.Equal(tolerated, []string{"node-role.kubernetes.io/control-plane", "node.kubernetes.io/not-ready"}) {
		t.Errorf("tolerations for %v", tolerated)
	}
	containers, _, _ := unstructured.NestedSlice(pod, "containers")
	env := map[string]string{}
	for _, e := range containers[0].(map[string]any)["env"].([]any) {
		e := e.(map[string]any)
		v, _ := e["value"].(string)
		if ref, ok, _ := unstructured.NestedString(e, "valueFrom", "fieldRef", "fieldPath"); ok {
			v = "fieldRef:" + ref
		}
		env[e["name"].(string)] = v
	}
	if env["KUBERNETES_SERVICE_HOST"] != "fieldRef:status.hostIP" || env["KUBERNETES_SERVICE_PORT"] != "6443" || env["POD_NAMESPACE"] != "fieldRef:metadata.namespace" {
		t.Errorf("env = %v, want the node's API server and the namespace", env)
	}
}

// TestManifests renders from the repository's config, reading the CRDs
// from the module cache (downloading them if needed).
func TestManifests(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cfg, err := config.Load("../../../config/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := Manifests(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(data)
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	var image string
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, o.GetName())
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			image = containers[0].(map[string]any)["image"].(string)
		}
	}
	for _, want := range []string{"certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io", "certificaterequests.cert-manager.io"} {
		if !slices.Contains(crds, want) {
			t.Errorf("CRD %s missing from %v", want, crds)
		}
	}
	if objs[0].GetKind() != "CustomResourceDefinition" {
		t.Errorf("first object is a %s, want the CRDs first", objs[0].GetKind())
	}
	if image != cfg.Build.CertManager.SubstituteImage {
		t.Errorf("Deployment image %q, want build.certManager.substituteImage %q", image, cfg.Build.CertManager.SubstituteImage)
	}
}

func TestCRDsBadModule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	_, err := CRDs(context.Background(), config.Module{Path: "github.com/cert-manager/cert-manager", Version: "not-a-version"})
	if err == nil || !strings.Contains(err.Error(), "github.com/cert-manager/cert-manager@not-a-version") {
		t.Errorf("err = %v, want an error naming the module", err)
	}
}
