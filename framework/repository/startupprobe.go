package repository

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Startup probes: why the harness adds them.
//
// `clusterctl init` returns when every provider's Deployment is Available,
// that is when the kubelet has seen its pod's readiness probe pass. The
// providers ship readiness probes with the default period, 10 s, and the
// kubelet probes a container it has just started about once per period:
// in one suite setup on a 2-core machine, three of the four Cluster API
// managers served their webhooks and /readyz 8-9 s before the kubelet
// marked them Ready (container started 22:27:31-34, "Serving webhook
// server" 22:27:34-36, Ready 22:27:43-45), and init waited for the last.
//
// A startup probe changes when the kubelet first finds out, and nothing
// after: while it runs, readiness and liveness probes are not run; it
// probes every StartupProbePeriodSeconds until its first success, and the
// kubelet then runs the readiness probe at once instead of at its next
// tick. From then on the shipped readiness and liveness probes run as
// shipped, so a manager that is slow to answer later (a saturated CI
// machine) is taken out of its Service no sooner than in production.

// StartupProbePeriodSeconds and StartupProbeFailureThreshold are the
// startup probe's period and how many failures it allows before the
// kubelet restarts the container: five minutes, more than the harness's
// default wait-controllers timeout (4 m), so the probe never kills a
// manager that init would still have waited for.
const (
	StartupProbePeriodSeconds    = 1
	StartupProbeFailureThreshold = 300
)

// probeHandlers are the keys of a probe that say what it runs.
var probeHandlers = []string{"httpGet", "tcpSocket", "grpc", "exec"}

// documentSeparator splits a multi-document YAML file.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// AddStartupProbes amends the provider components files of the local
// clusterctl repository that clusterctlConfigPath describes: in every
// Deployment, each container that has a readiness probe and no startup
// probe gets a startup probe that runs the readiness probe's handler
// (same httpGet, tcpSocket, grpc or exec, same timeout) every
// StartupProbePeriodSeconds, up to StartupProbeFailureThreshold times.
// Only the documents it changes are rewritten (as YAML of the same
// object, keys sorted); every other document, CRDs included, is kept byte
// for byte, and clusterctl variables ("${VAR}") stay as they were.
//
// It reads the providers' URLs from the configuration and amends, for
// each one that is a local file, the file of that name in every version
// folder of the provider. It returns a line per container amended
// ("<file>: <namespace>/<deployment>/<container>").
func AddStartupProbes(clusterctlConfigPath string) ([]string, error) {
	data, err := os.ReadFile(clusterctlConfigPath)
	if err != nil {
		return nil, fmt.Errorf("add startup probes: read clusterctl config: %w", err)
	}
	var cfg struct {
		Providers []struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"providers"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("add startup probes: parse clusterctl config %s: %w", clusterctlConfigPath, err)
	}
	var amended []string
	for _, p := range cfg.Providers {
		if p.URL == "" || strings.Contains(p.URL, "://") {
			continue // not in a local repository
		}
		// <repository>/<provider>/<version>/<components file>; the URL's
		// version may be "latest", which clusterctl resolves itself.
		files, err := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(p.URL)), "*", filepath.Base(p.URL)))
		if err != nil {
			return amended, fmt.Errorf("add startup probes: provider %s: %w", p.Name, err)
		}
		for _, f := range files {
			got, err := addStartupProbesToFile(f)
			if err != nil {
				return amended, fmt.Errorf("add startup probes: provider %s: %w", p.Name, err)
			}
			amended = append(amended, got...)
		}
	}
	return amended, nil
}

func addStartupProbesToFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out, amended, err := AddStartupProbesToComponents(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(amended) == 0 {
		return nil, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, out, info.Mode().Perm()); err != nil {
		return nil, err
	}
	for i, a := range amended {
		amended[i] = path + ": " + a
	}
	return amended, nil
}

// AddStartupProbesToComponents does AddStartupProbes' work on one
// components file's content: it returns the new content and a line per
// container amended ("<namespace>/<deployment>/<container>"). A document
// that is not YAML is left as it is, for clusterctl to report.
func AddStartupProbesToComponents(data []byte) ([]byte, []string, error) {
	docs := splitDocuments(data)
	var amended []string
	changed := false
	for i, doc := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			continue
		}
		if kind, _, _ := unstructured.NestedString(obj, "kind"); kind != "Deployment" {
			continue
		}
		name, _, _ := unstructured.NestedString(obj, "metadata", "name")
		namespace, _, _ := unstructured.NestedString(obj, "metadata", "namespace")
		names := addStartupProbesToDeployment(obj)
		if len(names) == 0 {
			continue
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("deployment %s/%s: %w", namespace, name, err)
		}
		docs[i] = append([]byte("\n"), out...)
		changed = true
		for _, n := range names {
			amended = append(amended, namespace+"/"+name+"/"+n)
		}
	}
	if !changed {
		return data, nil, nil
	}
	return bytes.Join(docs, []byte("---")), amended, nil
}

// splitDocuments splits data at its "---" lines, which it drops; joining
// the parts with "---" gives data back.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	last := 0
	for _, m := range documentSeparator.FindAllIndex(data, -1) {
		docs = append(docs, data[last:m[0]])
		last = m[1]
	}
	return append(docs, data[last:])
}

// addStartupProbesToDeployment adds the startup probes to obj, a
// Deployment, and returns the names of the containers it amended.
func addStartupProbesToDeployment(obj map[string]any) []string {
	field, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "template", "spec", "containers")
	containers, _ := field.([]any)
	var names []string
	for _, c := range containers {
		container, _ := c.(map[string]any)
		readiness, _ := container["readinessProbe"].(map[string]any)
		if readiness == nil || container["startupProbe"] != nil {
			continue
		}
		startup := map[string]any{
			"periodSeconds":    StartupProbePeriodSeconds,
			"failureThreshold": StartupProbeFailureThreshold,
		}
		for _, k := range append(probeHandlers, "timeoutSeconds") {
			if v, ok := readiness[k]; ok {
				startup[k] = v
			}
		}
		if !slices.ContainsFunc(probeHandlers, func(k string) bool { return startup[k] != nil }) {
			continue // a readiness probe without a handler: leave it to the API server to refuse
		}
		container["startupProbe"] = startup
		name, _ := container["name"].(string)
		names = append(names, name)
	}
	return names
}
