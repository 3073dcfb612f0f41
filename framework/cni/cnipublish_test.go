package cni

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// kubeRouterManifest has the shape of kube-router's
// daemonset/generic-kuberouter.yaml: a ConfigMap, the DaemonSet (its init
// container writes the CNI configuration into /etc/cni/net.d) and a
// ServiceAccount.
const kubeRouterManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-router-cfg
  namespace: kube-system
data:
  cni-conf.json: |
    {"cniVersion":"0.3.0","name":"mynet","plugins":[{"type":"bridge","ipam":{"type":"host-local"}}]}

---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-router
  namespace: kube-system
spec:
  selector:
    matchLabels:
      k8s-app: kube-router
  template:
    metadata:
      labels:
        k8s-app: kube-router
    spec:
      containers:
      - name: kube-router
        image: cloudnativelabs/kube-router:v2.1.0
        args:
        - "--run-router=true"
        - "--routes-sync-period=10s"
        env:
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        - name: KUBE_ROUTER_CNI_CONF_FILE
          value: /etc/cni/net.d/10-kuberouter.conflist
        volumeMounts:
        - name: cni-conf-dir
          mountPath: /etc/cni/net.d
      initContainers:
      - name: install-cni
        image: cloudnativelabs/kube-router:v2.1.0
        command:
        - /bin/sh
        - -c
        - set -e -x;
          cp /etc/kube-router/cni-conf.json $TMP;
          mv $TMP /etc/cni/net.d/10-kuberouter.conflist;
        volumeMounts:
        - mountPath: /etc/cni/net.d
          name: cni-conf-dir
        - mountPath: /etc/kube-router
          name: kube-router-cfg
      volumes:
      - name: cni-conf-dir
        hostPath:
          path: /etc/cni/net.d
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-router
  namespace: kube-system
`

// publishedDaemonSet runs PublishRangedCNIConfig on manifest and returns
// the output and its DaemonSet.
func publishedDaemonSet(t *testing.T, manifest string) (string, appsv1.DaemonSet) {
	t.Helper()
	out, err := PublishRangedCNIConfig([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	found := false
	for _, doc := range strings.Split(string(out), "\n---\n") {
		if strings.Contains(doc, "kind: DaemonSet") {
			if err := yaml.UnmarshalStrict([]byte(doc), &ds); err != nil {
				t.Fatalf("the DaemonSet does not decode: %v\n%s", err, doc)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no DaemonSet in the output:\n%s", out)
	}
	return string(out), ds
}

func TestPublishRangedCNIConfig(t *testing.T) {
	out, ds := publishedDaemonSet(t, kubeRouterManifest)

	spec := ds.Spec.Template.Spec
	ic, c := spec.InitContainers[0], spec.Containers[0]
	if len(ic.Command) != 3 || ic.Command[0] != "/bin/sh" || ic.Command[1] != "-c" || ic.Args != nil {
		t.Fatalf("install-cni command = %q, args %q; want /bin/sh -c SCRIPT", ic.Command, ic.Args)
	}
	if !strings.Contains(ic.Command[2], "T="+KubeRouterCNITemplate+"\n") || strings.Contains(ic.Command[2], KubeRouterCNIConfig) {
		t.Errorf("install-cni must write %s and not %s:\n%s", KubeRouterCNITemplate, KubeRouterCNIConfig, ic.Command[2])
	}

	// The image's entrypoint is wrapped: sh -c SCRIPT NAME ENTRYPOINT, and
	// the args stay, so "$@" is the entrypoint and its args.
	if len(c.Command) != 5 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" || c.Command[3] != "kube-router" || c.Command[4] != "/usr/local/bin/kube-router" {
		t.Errorf("kube-router command = %q, want /bin/sh -c SCRIPT kube-router /usr/local/bin/kube-router", c.Command)
	} else if script := c.Command[2]; !strings.Contains(script, "P="+KubeRouterCNIConfig+"\n") || !strings.HasSuffix(script, "exec \"$@\"\n") {
		t.Errorf("the publish script must publish to %s and end by running \"$@\":\n%s", KubeRouterCNIConfig, script)
	}
	if want := []string{"--run-router=true", "--routes-sync-period=10s"}; strings.Join(c.Args, " ") != strings.Join(want, " ") {
		t.Errorf("args = %q, want %q", c.Args, want)
	}
	var confEnv []corev1.EnvVar
	for _, e := range c.Env {
		if e.Name == "KUBE_ROUTER_CNI_CONF_FILE" {
			confEnv = append(confEnv, e)
		}
	}
	if len(confEnv) != 1 || confEnv[0].Value != KubeRouterCNITemplate {
		t.Errorf("KUBE_ROUTER_CNI_CONF_FILE = %+v, want one, %s", confEnv, KubeRouterCNITemplate)
	}
	if len(c.Env) != 2 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom == nil {
		t.Errorf("the other env vars must stay: %+v", c.Env)
	}

	// The other documents are kept as they were, and nothing is added
	// that the original did not have.
	for _, want := range []string{
		"kind: ConfigMap\nmetadata:\n  name: kube-router-cfg",
		`    {"cniVersion":"0.3.0","name":"mynet","plugins":[{"type":"bridge","ipam":{"type":"host-local"}}]}`,
		"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: kube-router\n  namespace: kube-system\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n---\n"); n != 2 {
		t.Errorf("want 3 documents (2 separators), got %d separators:\n%s", n, out)
	}
	for _, bad := range []string{"status:", "creationTimestamp", "${", "{{", "$$"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q (clusterctl takes ${ and $$, kind's template {{):\n%s", bad, out)
		}
	}
}

func TestPublishRangedCNIConfigWrapsACommand(t *testing.T) {
	m := strings.Replace(kubeRouterManifest, "        args:\n", "        command: [/opt/kube-router, --v=2]\n        args:\n", 1)
	_, ds := publishedDaemonSet(t, m)
	c := ds.Spec.Template.Spec.Containers[0]
	if got := strings.Join(append(c.Command[3:], c.Args...), " "); got != "kube-router /opt/kube-router --v=2 --run-router=true --routes-sync-period=10s" {
		t.Errorf("$0 and \"$@\" = %q, want the manifest's command and args", got)
	}
}

func TestPublishRangedCNIConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct{ manifest, want string }{
		"no DaemonSet": {
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
			want:     `no DaemonSet with a "kube-router" container and a "install-cni" init container`,
		},
		"no init container": {
			manifest: strings.Replace(kubeRouterManifest, "name: install-cni", "name: other", 1),
			want:     `no DaemonSet with a "kube-router" container`,
		},
		"no CNI directory mount": {
			manifest: strings.Replace(kubeRouterManifest, "        - name: cni-conf-dir\n          mountPath: /etc/cni/net.d\n", "", 1),
			want:     `document 2: DaemonSet kube-router: container "kube-router" does not mount /etc/cni/net.d`,
		},
		"unknown field": {
			manifest: strings.Replace(kubeRouterManifest, "      - name: kube-router\n", "      - name: kube-router\n        colour: red\n", 1),
			want:     `document 2: error unmarshaling JSON: while decoding JSON: json: unknown field "colour"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := PublishRangedCNIConfig([]byte(tc.manifest))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
			if !strings.HasPrefix(err.Error(), "publish kube-router's CNI configuration: ") {
				t.Errorf("error %q does not say what failed", err)
			}
		})
	}
}

func TestPublishRangedCNIConfigMountsKubeProxyKubeconfig(t *testing.T) {
	_, ds := publishedDaemonSet(t, kubeRouterManifest)
	spec := ds.Spec.Template.Spec
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == kubeProxyVolume {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil || vol.ConfigMap == nil {
		t.Fatalf("no ConfigMap volume %q in %+v", kubeProxyVolume, spec.Volumes)
	}
	cm := vol.ConfigMap
	if cm.Name != "kube-proxy" || cm.Optional == nil || !*cm.Optional ||
		len(cm.Items) != 1 || cm.Items[0].Key != "kubeconfig.conf" || cm.Items[0].Path != "kubeconfig.conf" {
		t.Errorf("volume %q = %+v, want kubeadm's kube-proxy ConfigMap, optional, its kubeconfig.conf only", kubeProxyVolume, cm)
	}
	c := spec.Containers[0]
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == kubeProxyVolume && m.MountPath == kubeProxyMountDir && m.ReadOnly
	}) {
		t.Errorf("kube-router does not mount %q read-only at %s: %+v", kubeProxyVolume, kubeProxyMountDir, c.VolumeMounts)
	}
	if script := c.Command[2]; !strings.Contains(script, "K="+kubeProxyMountDir+"/kubeconfig.conf\n") {
		t.Errorf("the publish script does not use %s/kubeconfig.conf:\n%s", kubeProxyMountDir, script)
	}
	if ic := spec.InitContainers[0]; len(ic.VolumeMounts) != 2 {
		t.Errorf("install-cni's mounts changed: %+v", ic.VolumeMounts)
	}

	m := strings.Replace(kubeRouterManifest, "      volumes:\n", "      volumes:\n      - name: "+kubeProxyVolume+"\n        emptyDir: {}\n", 1)
	if _, err := PublishRangedCNIConfig([]byte(m)); err == nil || !strings.Contains(err.Error(), `already has a volume "`+kubeProxyVolume+`"`) {
		t.Errorf("a manifest with a volume of that name: %v", err)
	}
}

func TestAddPortMap(t *testing.T) {
	out, err := AddPortMap([]byte(kubeRouterManifest))
	if err != nil {
		t.Fatal(err)
	}
	docs, list := cniList(t, out)
	if list.Name != "mynet" || len(list.Plugins) != 2 || list.Plugins[0]["type"] != "bridge" || list.Plugins[1]["type"] != "portmap" {
		t.Errorf("configuration list = %+v, want bridge then portmap", list)
	}
	if caps, _ := list.Plugins[1]["capabilities"].(map[string]any); caps["portMappings"] != true {
		t.Errorf("portmap without the portMappings capability: %v", list.Plugins[1])
	}
	if len(docs) != 3 || !strings.Contains(docs[1], "kind: DaemonSet") {
		t.Errorf("the other documents changed: %d documents", len(docs))
	}
	// Once is enough.
	again, err := AddPortMap(out)
	if err != nil || string(again) != string(out) {
		t.Errorf("a second AddPortMap changed the manifest (%v)", err)
	}
	if _, err := AddPortMap([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n")); err == nil || !strings.Contains(err.Error(), "no ConfigMap holds cni-conf.json") {
		t.Errorf("a manifest without the configuration: %v", err)
	}
}

func TestEnableHairpin(t *testing.T) {
	out, err := EnableHairpin([]byte(kubeRouterManifest))
	if err != nil {
		t.Fatal(err)
	}
	docs, list := cniList(t, out)
	if len(list.Plugins) != 1 || list.Plugins[0]["type"] != "bridge" || list.Plugins[0]["hairpinMode"] != true {
		t.Errorf("configuration list = %+v, want the bridge with hairpinMode true", list)
	}
	if len(docs) != 3 || !strings.Contains(docs[1], "kind: DaemonSet") {
		t.Errorf("the other documents changed: %d documents", len(docs))
	}
	again, err := EnableHairpin(out)
	if err != nil || string(again) != string(out) {
		t.Errorf("a second EnableHairpin changed the manifest (%v)", err)
	}
	noBridge := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  cni-conf.json: '{\"plugins\":[{\"type\":\"ptp\"}]}'\n"
	if _, err := EnableHairpin([]byte(noBridge)); err == nil || !strings.Contains(err.Error(), "ConfigMap x: cni-conf.json: no bridge plugin") {
		t.Errorf("a configuration without a bridge: %v", err)
	}
}

// cniConfList is the part of a CNI configuration list the tests read.
type cniConfList struct {
	Name    string
	Plugins []map[string]any
}

// cniList returns the documents of manifest and the configuration list of
// its first one, the ConfigMap holding kubeRouterCNIKey.
func cniList(t *testing.T, manifest []byte) ([]string, cniConfList) {
	t.Helper()
	docs := strings.Split(string(manifest), "\n---\n")
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(docs[0]), &cm); err != nil {
		t.Fatal(err)
	}
	conf := cm.Data[kubeRouterCNIKey]
	var list cniConfList
	if err := json.Unmarshal([]byte(conf), &list); err != nil {
		t.Fatalf("%s: %v\n%s", kubeRouterCNIKey, err, conf)
	}
	return docs, list
}
