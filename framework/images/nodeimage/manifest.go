package nodeimage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// KubeRouterManifestPath is the manifest of kube-router's module that
// becomes the node images' default CNI: kube-router as the pod network
// (routing and network policy) with an in-cluster service account, which
// kind applies as is.
const KubeRouterManifestPath = "daemonset/generic-kuberouter.yaml"

// RewriteCNIManifest pins every container and init container of the
// DaemonSets in a multi-document manifest to image, with imagePullPolicy
// IfNotPresent: the image is preloaded in the node and cannot be pulled.
// Other documents are kept as they are (re-encoded). It is an error when no
// DaemonSet container was found, which means the manifest is not the one
// expected.
func RewriteCNIManifest(manifest []byte, image string) ([]byte, error) {
	if image == "" {
		return nil, errors.New("rewrite CNI manifest: no image given")
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var docs []string
	rewritten := 0
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("rewrite CNI manifest: %w", err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("rewrite CNI manifest: document %d: %w", len(docs)+1, err)
		}
		if obj == nil {
			continue // an empty document
		}
		if obj["kind"] == "DaemonSet" {
			n, err := pinContainers(obj, image)
			if err != nil {
				return nil, fmt.Errorf("rewrite CNI manifest: DaemonSet %v: %w", name(obj), err)
			}
			rewritten += n
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("rewrite CNI manifest: %w", err)
		}
		docs = append(docs, string(out))
	}
	if rewritten == 0 {
		return nil, errors.New("rewrite CNI manifest: no DaemonSet container found")
	}
	return []byte(strings.Join(docs, "---\n")), nil
}

func name(obj map[string]any) any {
	if md, ok := obj["metadata"].(map[string]any); ok {
		return md["name"]
	}
	return nil
}

// pinContainers rewrites spec.template.spec.{containers,initContainers} of
// a workload object and returns how many containers it changed.
func pinContainers(obj map[string]any, image string) (int, error) {
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	podSpec, ok := tmpl["spec"].(map[string]any)
	if !ok {
		return 0, errors.New("no spec.template.spec")
	}
	n := 0
	for _, key := range []string{"initContainers", "containers"} {
		list, _ := podSpec[key].([]any)
		for i, c := range list {
			cm, ok := c.(map[string]any)
			if !ok {
				return n, fmt.Errorf("%s[%d] is not an object", key, i)
			}
			cm["image"] = image
			cm["imagePullPolicy"] = "IfNotPresent"
			n++
		}
	}
	return n, nil
}

var kubeletExtraArgs = regexp.MustCompile(`(?m)^KUBELET_EXTRA_ARGS=(.*)$`)

// AddKubeletArgs adds flags to KUBELET_EXTRA_ARGS in the content of
// /etc/default/kubelet (an environment file kubelet's systemd unit reads),
// adding the variable when it is missing. A flag whose name is set already
// is replaced. Values must not need quoting.
func AddKubeletArgs(env []byte, flags ...string) ([]byte, error) {
	for _, f := range flags {
		if !strings.HasPrefix(f, "--") || strings.ContainsAny(f, " \t\"'\n") {
			return nil, fmt.Errorf("add kubelet flag %q: want --name[=value] without spaces or quotes", f)
		}
	}
	flagName := func(f string) string { n, _, _ := strings.Cut(f, "="); return n }
	merge := func(existing string) string {
		var out []string
		for _, old := range strings.Fields(strings.Trim(existing, `"'`)) {
			keep := true
			for _, f := range flags {
				if flagName(old) == flagName(f) {
					keep = false
				}
			}
			if keep {
				out = append(out, old)
			}
		}
		return "KUBELET_EXTRA_ARGS=" + strings.Join(append(out, flags...), " ")
	}
	s := string(env)
	switch m := kubeletExtraArgs.FindAllStringSubmatchIndex(s, -1); len(m) {
	case 0:
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return []byte(s + merge("") + "\n"), nil
	case 1:
		out := s[:m[0][0]] + merge(s[m[0][2]:m[0][3]]) + s[m[0][1]:]
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		return []byte(out), nil
	default:
		return nil, errors.New("add kubelet flags: KUBELET_EXTRA_ARGS is set more than once")
	}
}
