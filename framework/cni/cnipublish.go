package cni

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kube-router's CNI configuration: where its init container puts it without
// a pod range and kube-router adds the node's range (KubeRouterCNITemplate),
// and where the container runtime reads it (KubeRouterCNIConfig).
//
// kube-router's own manifest writes the configuration straight into
// /etc/cni/net.d and adds the range only once kube-router runs, 10–20 s
// later on a 2-core machine. In between containerd reports the network
// ready, the node turns Ready, pods are scheduled, and every pod sandbox
// fails with `plugin type="bridge" … failed (add): no IP ranges specified`;
// the kubelet retries each such pod only after a back-off, and its Secret
// volumes back off too. The template lives in a subdirectory, which
// containerd's CNI loader does not read (it loads the directory's own
// files), and the kube-router container publishes it once it holds a range
// (PublishRangedCNIConfig): until then the node stays NotReady and pods
// stay unscheduled instead of failing.
const (
	KubeRouterCNITemplate = "/etc/cni/net.d/kube-router/10-kuberouter.conflist"
	KubeRouterCNIConfig   = "/etc/cni/net.d/10-kuberouter.conflist"
)

// kube-router, as shipped, reaches the API server through the kubernetes
// Service's cluster IP, which only answers once kube-proxy on the same node
// has written its rules. Both start together on a new node, in either
// order; when kube-router was first, it retried its lists with a back-off
// and the node stayed NotReady until it got through: 4.1-4.6 s after it
// started on a 2-core machine's kind node in two of three PR jobs (the
// management cluster's setup waits on it), 1.6 s on a workload cluster's
// worker. kubeadm's kube-proxy ConfigMap holds the kubeconfig kube-proxy
// itself uses for this reason: the control plane's endpoint, with the
// pod's own service account token and CA. kube-router mounts it (optional:
// kubeProxyVolume) and uses it, under its own service account.
const (
	kubeProxyConfigMap   = "kube-proxy"
	kubeProxyVolume      = "capd-e2e-kube-proxy-kubeconfig"
	kubeProxyMountDir    = "/var/lib/capd-e2e/kube-proxy"
	kubeProxyKubeconfig  = kubeProxyMountDir + "/kubeconfig.conf"
	kubeProxyKubeconfKey = "kubeconfig.conf"
)

const (
	kubeRouterContainer     = "kube-router"
	kubeRouterInitContainer = "install-cni"
	kubeRouterCNIConfEnv    = "KUBE_ROUTER_CNI_CONF_FILE"
	// kubeRouterCNISource is the configuration template the init container
	// copies: the cni-conf.json key of the manifest's ConfigMap, mounted at
	// /etc/kube-router.
	kubeRouterCNISource = "/etc/kube-router/cni-conf.json"
	cniConfDir          = "/etc/cni/net.d"
)

// kubeRouterInstallScript replaces install-cni's: the template goes to
// KubeRouterCNITemplate instead of the runtime's directory, and, as in
// kube-router's own script, stale *.conf files go when it is first written
// and the image's cni-install (if any) runs. No "${": the manifest passes
// through clusterctl's variable substitution (see RewriteKubeRouterManifest);
// no "{{": kind reads its default CNI manifest as a Go template.
const kubeRouterInstallScript = `set -e -x
T=` + KubeRouterCNITemplate + `
mkdir -p "$(dirname "$T")"
if [ ! -f "$T" ]; then
  rm -f ` + cniConfDir + `/*.conf
  cp ` + kubeRouterCNISource + ` "$T.tmp"
  mv "$T.tmp" "$T"
fi
if [ -x /usr/local/bin/cni-install ]; then
  /usr/local/bin/cni-install
fi
`

// kubeRouterPublishScript runs in the kube-router container in front of
// kube-router ("$@"): in the background it copies the template to
// KubeRouterCNIConfig whenever the template names a subnet and differs from
// the published file (kube-router rewrites it at start, with the range and
// MTU). The copy is checked against the template after it is taken, so a
// read that raced kube-router's write (truncate, then write) is not
// published; it is renamed into place, so containerd never reads it half
// written (a .tmp file is not a CNI configuration for containerd). It checks
// twice a second until the first publication, then every 10 s.
//
// It also points kube-router at the API server kube-proxy uses
// (kubeProxyKubeconfig), unless the args already name a --kubeconfig or a
// --master or the file is missing (a cluster without kubeadm's kube-proxy
// ConfigMap: kube-router then uses its in-cluster configuration, as shipped).
const kubeRouterPublishScript = `T=` + KubeRouterCNITemplate + `
P=` + KubeRouterCNIConfig + `
(
  wait=0.5
  while :; do
    if grep -q '"subnet"' "$T" 2>/dev/null && ! cmp -s "$T" "$P"; then
      if cp "$T" "$P.tmp" && grep -q '"subnet"' "$P.tmp" && cmp -s "$T" "$P.tmp" && mv "$P.tmp" "$P"; then
        echo "capd-e2e: published $T to $P"
        wait=10
      fi
      rm -f "$P.tmp"
    fi
    sleep "$wait"
  done
) &
K=` + kubeProxyKubeconfig + `
if [ -s "$K" ] && ! printf '%s\n' "$@" | grep -q -e '^--kubeconfig' -e '^--master'; then
  echo "capd-e2e: kube-router reaches the API server as kube-proxy does, through $K"
  set -- "$@" --kubeconfig="$K"
fi
exec "$@"
`

// PublishRangedCNIConfig changes kube-router's DaemonSet in manifest (a
// multi-document YAML stream) so that its CNI configuration reaches the
// container runtime only once it holds the node's pod range (see
// KubeRouterCNITemplate): the install-cni init container writes the
// template, KUBE_ROUTER_CNI_CONF_FILE points kube-router at it, and the
// kube-router container's command becomes a shell that publishes it and
// then runs the original command (the image's entrypoint,
// /usr/local/bin/kube-router, when the manifest sets none) with the same
// args; that shell also points kube-router at kube-proxy's kubeconfig when
// the node has it (see kubeProxyConfigMap). The other documents are kept as
// they are. It is an error when the manifest has no DaemonSet with both
// containers, or when either does not mount /etc/cni/net.d.
func PublishRangedCNIConfig(manifest []byte) ([]byte, error) {
	out, found, err := rewriteDocuments(manifest, "DaemonSet", publishInDaemonSet)
	if err == nil && !found {
		err = fmt.Errorf("no DaemonSet with a %q container and a %q init container", kubeRouterContainer, kubeRouterInitContainer)
	}
	if err != nil {
		return nil, fmt.Errorf("publish kube-router's CNI configuration: %w", err)
	}
	return out, nil
}

// rewriteDocuments passes each document of manifest (a multi-document
// YAML stream) whose kind is kind to rewrite, which returns it changed
// and whether it was the one it looks for, and keeps the others as they
// are. found reports whether rewrite found one.
func rewriteDocuments(manifest []byte, kind string, rewrite func(doc []byte) (out []byte, ok bool, err error)) (out []byte, found bool, err error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var docs [][]byte
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, false, fmt.Errorf("document %d: %w", n, err)
		}
		if meta.Kind == kind {
			changed, ok, err := rewrite(doc)
			if err != nil {
				return nil, false, fmt.Errorf("document %d: %w", n, err)
			}
			if ok {
				doc, found = changed, true
			}
		}
		docs = append(docs, bytes.TrimRight(doc, "\n"))
	}
	return append(bytes.Join(docs, []byte("\n---\n")), '\n'), found, nil
}

// publishInDaemonSet rewrites one DaemonSet document; ok is false when it
// is not kube-router's (it lacks either container).
func publishInDaemonSet(doc []byte) (out []byte, ok bool, err error) {
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(doc, &ds); err != nil {
		return nil, false, err
	}
	spec := &ds.Spec.Template.Spec
	ic := containerNamed(spec.InitContainers, kubeRouterInitContainer)
	c := containerNamed(spec.Containers, kubeRouterContainer)
	if ic == nil || c == nil {
		return nil, false, nil
	}
	for _, x := range []*corev1.Container{ic, c} {
		if !slices.ContainsFunc(x.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == cniConfDir }) {
			return nil, false, fmt.Errorf("DaemonSet %s: container %q does not mount %s", ds.Name, x.Name, cniConfDir)
		}
	}

	ic.Command, ic.Args = []string{"/bin/sh", "-c", kubeRouterInstallScript}, nil

	entry := c.Command
	if len(entry) == 0 {
		entry = []string{"/usr/local/bin/kube-router"}
	}
	// sh -c SCRIPT NAME ARG...: "$@" is entry followed by the args.
	c.Command = append([]string{"/bin/sh", "-c", kubeRouterPublishScript, kubeRouterContainer}, entry...)
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == kubeRouterCNIConfEnv }); i >= 0 {
		c.Env[i] = corev1.EnvVar{Name: kubeRouterCNIConfEnv, Value: KubeRouterCNITemplate}
	} else {
		c.Env = append(c.Env, corev1.EnvVar{Name: kubeRouterCNIConfEnv, Value: KubeRouterCNITemplate})
	}
	if slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == kubeProxyVolume }) {
		return nil, false, fmt.Errorf("DaemonSet %s already has a volume %q", ds.Name, kubeProxyVolume)
	}
	optional := true
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: kubeProxyVolume, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: kubeProxyConfigMap},
			Items:                []corev1.KeyToPath{{Key: kubeProxyKubeconfKey, Path: kubeProxyKubeconfKey}},
			Optional:             &optional,
		},
	}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: kubeProxyVolume, MountPath: kubeProxyMountDir, ReadOnly: true})

	// Marshal without the fields a typed object adds (status,
	// creationTimestamp: null), which the original does not have.
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ds)
	if err != nil {
		return nil, false, err
	}
	unstructured.RemoveNestedField(obj, "status")
	for _, f := range [][]string{{"metadata", "creationTimestamp"}, {"spec", "template", "metadata", "creationTimestamp"}} {
		if v, found, _ := unstructured.NestedFieldNoCopy(obj, f...); found && v == nil {
			unstructured.RemoveNestedField(obj, f...)
		}
	}
	out, err = yaml.Marshal(obj)
	return out, true, err
}

func containerNamed(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// kubeRouterCNIKey is the key of kube-router's CNI configuration in its
// manifest's ConfigMap.
const kubeRouterCNIKey = "cni-conf.json"

// portMap is the CNI plugin that makes a pod's hostPort reach it, as
// kube-router's documentation has it added after the bridge plugin
// (kube-router itself does not map host ports). Without it, a pod's
// hostPort is silently ignored: Kubernetes' conformance test "HostPort
// validates that there is no conflict between pods with same hostPort but
// different hostIP and protocol" fails. The node images' CNI plugins
// (Debian's containernetworking-plugins) include it.
var portMap = map[string]any{"type": "portmap", "snat": true, "capabilities": map[string]any{"portMappings": true}}

// AddPortMap adds the portmap plugin (portMap) to the CNI configuration
// list in manifest's ConfigMap holding kubeRouterCNIKey, unless the list
// has one. The other documents are kept as they are. It is an error when
// no ConfigMap holds a configuration list.
func AddPortMap(manifest []byte) ([]byte, error) {
	return editCNIList(manifest, "add the portmap CNI plugin", func(plugins []any) ([]any, error) {
		if slices.ContainsFunc(plugins, func(p any) bool { m, _ := p.(map[string]any); return m["type"] == "portmap" }) {
			return plugins, nil
		}
		return append(plugins, portMap), nil
	})
}

// EnableHairpin sets hairpinMode on the bridge plugin of the CNI
// configuration list in manifest's ConfigMap holding kubeRouterCNIKey:
// the bridge then sends a frame back out of the port it came in by, which
// a Pod that reaches itself through a Service needs. With
// bridge-nf-call-iptables on (as in kind's and CAPD's nodes), kube-proxy's
// DNAT happens as the frame crosses kube-bridge, and the frame to the Pod
// itself leaves by the port it entered: without hairpinMode the bridge
// drops it. Kubernetes' dual-stack e2e tests "should function for
// endpoint-Service: http" and ": udp" failed so, every retry, on both
// dual-stack clusters (docs/ipv6.md). It is an error when no ConfigMap
// holds a configuration list or the list has no bridge plugin.
func EnableHairpin(manifest []byte) ([]byte, error) {
	return editCNIList(manifest, "turn on the bridge's hairpin mode", func(plugins []any) ([]any, error) {
		for _, p := range plugins {
			if m, ok := p.(map[string]any); ok && m["type"] == "bridge" {
				m["hairpinMode"] = true
				return plugins, nil
			}
		}
		return nil, fmt.Errorf("no bridge plugin")
	})
}

// editCNIList applies edit to the plugins of the CNI configuration list
// in manifest's ConfigMap holding kubeRouterCNIKey; what names the edit
// in errors. The other documents are kept as they are. It is an error
// when no ConfigMap holds a configuration list.
func editCNIList(manifest []byte, what string, edit func(plugins []any) ([]any, error)) ([]byte, error) {
	out, found, err := rewriteDocuments(manifest, "ConfigMap", func(doc []byte) ([]byte, bool, error) {
		return editCNIListDocument(doc, edit)
	})
	if err == nil && !found {
		err = fmt.Errorf("no ConfigMap holds %s", kubeRouterCNIKey)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// editCNIListDocument is editCNIList on one ConfigMap document; ok is
// false when it holds no kubeRouterCNIKey.
func editCNIListDocument(doc []byte, edit func(plugins []any) ([]any, error)) (out []byte, ok bool, err error) {
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return nil, false, err
	}
	conf, found, err := unstructured.NestedString(obj, "data", kubeRouterCNIKey)
	if err != nil || !found {
		return nil, false, err
	}
	name, _, _ := unstructured.NestedString(obj, "metadata", "name")
	var list map[string]any
	if err := json.Unmarshal([]byte(conf), &list); err != nil {
		return nil, false, fmt.Errorf("ConfigMap %s: %s: %w", name, kubeRouterCNIKey, err)
	}
	plugins, isList := list["plugins"].([]any)
	if !isList {
		return nil, false, fmt.Errorf("ConfigMap %s: %s is not a configuration list (no plugins)", name, kubeRouterCNIKey)
	}
	edited, err := edit(plugins)
	if err != nil {
		return nil, false, fmt.Errorf("ConfigMap %s: %s: %w", name, kubeRouterCNIKey, err)
	}
	list["plugins"] = edited
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, false, err
	}
	if string(data)+"\n" == conf {
		return doc, true, nil
	}
	if err := unstructured.SetNestedField(obj, string(data)+"\n", "data", kubeRouterCNIKey); err != nil {
		return nil, false, err
	}
	out, err = yaml.Marshal(obj)
	return out, true, err
}
