package repository

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// probeComponents is shaped like a rendered provider's: a CRD, a Deployment
// whose manager has probes, one whose container already has a startup
// probe, and a clusterctl variable that must survive.
const probeComponents = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com   # kept byte for byte, comments included
spec:
  group: example.com
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: capd-controller-manager
  namespace: capd-system
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: manager
        args:
        - --feature-gates=MachinePool=${EXP_MACHINE_POOL:=true}
        readinessProbe:
          httpGet:
            path: /readyz
            port: healthz
        livenessProbe:
          httpGet:
            path: /healthz
            port: healthz
      - name: sidecar
        image: busybox
      - name: proxy
        readinessProbe:
          tcpSocket: {port: 8443}
          timeoutSeconds: 3
          periodSeconds: 20
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: already
  namespace: other
spec:
  template:
    spec:
      containers:
      - name: c
        readinessProbe:
          tcpSocket: {port: 80}
        startupProbe:
          tcpSocket: {port: 80}
          periodSeconds: 7
`

func TestAddStartupProbesToComponents(t *testing.T) {
	out, amended, err := AddStartupProbesToComponents([]byte(probeComponents))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"capd-system/capd-controller-manager/manager", "capd-system/capd-controller-manager/proxy"}; !slices.Equal(amended, want) {
		t.Errorf("amended %q, want %q", amended, want)
	}
	docs := splitDocuments(out)
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want 3:\n%s", len(docs), out)
	}
	orig := splitDocuments([]byte(probeComponents))
	if string(docs[0]) != string(orig[0]) || string(docs[2]) != string(orig[2]) {
		t.Errorf("documents it did not amend changed:\n%s", out)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(docs[1], &d); err != nil {
		t.Fatalf("amended Deployment does not decode: %v\n%s", err, docs[1])
	}
	m := d.Spec.Template.Spec.Containers[0]
	sp := m.StartupProbe
	if sp == nil || sp.HTTPGet == nil || sp.HTTPGet.Path != "/readyz" || sp.HTTPGet.Port.String() != "healthz" ||
		sp.PeriodSeconds != StartupProbePeriodSeconds || sp.FailureThreshold != StartupProbeFailureThreshold {
		t.Errorf("manager's startup probe = %+v, want GET /readyz on healthz every %ds, %d failures", sp, StartupProbePeriodSeconds, StartupProbeFailureThreshold)
	}
	if m.ReadinessProbe == nil || m.ReadinessProbe.PeriodSeconds != 0 || m.LivenessProbe == nil || m.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("the shipped probes changed: readiness %+v, liveness %+v", m.ReadinessProbe, m.LivenessProbe)
	}
	if !slices.Contains(m.Args, "--feature-gates=MachinePool=${EXP_MACHINE_POOL:=true}") {
		t.Errorf("args lost the clusterctl variable: %q", m.Args)
	}
	if d.Spec.Template.Spec.Containers[1].StartupProbe != nil {
		t.Error("a container without a readiness probe got a startup probe")
	}
	// Another handler, and the readiness probe's timeout; not its period.
	if sp := d.Spec.Template.Spec.Containers[2].StartupProbe; sp == nil || sp.TCPSocket == nil || sp.TCPSocket.Port.IntValue() != 8443 ||
		sp.TimeoutSeconds != 3 || sp.PeriodSeconds != StartupProbePeriodSeconds {
		t.Errorf("proxy's startup probe = %+v, want TCP 8443 with a 3 s timeout every %ds", sp, StartupProbePeriodSeconds)
	}

	// Amending again changes nothing: the probe is there now.
	again, amended, err := AddStartupProbesToComponents(out)
	if err != nil || len(amended) != 0 || string(again) != string(out) {
		t.Errorf("second pass: amended %q, err %v, changed %v", amended, err, string(again) != string(out))
	}
}

func TestAddStartupProbesLeavesUnparsableDocuments(t *testing.T) {
	// Not YAML (clusterctl reports it when it reads the file): kept as is,
	// and the Deployment after it is still amended.
	in := "kind: Deployment\nspec: [\n---\n" + string(splitDocuments([]byte(probeComponents))[1][1:])
	out, amended, err := AddStartupProbesToComponents([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(amended) != 2 || !strings.HasPrefix(string(out), "kind: Deployment\nspec: [\n---\n") {
		t.Errorf("amended %q; out:\n%s", amended, out)
	}
}

func TestAddStartupProbesRepository(t *testing.T) {
	repo := t.TempDir()
	files := map[string]string{
		"infrastructure-docker/v1.14.2/components.yaml": probeComponents,
		"infrastructure-docker/v1.14.1/components.yaml": probeComponents,
		"infrastructure-docker/v1.14.2/metadata.yaml":   "kind: Deployment\nmetadata: {name: not-a-components-file}\n",
	}
	for name, content := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(repo, "clusterctl-config.yaml")
	conf := "providers:\n" +
		"- name: docker\n  type: InfrastructureProvider\n  url: " + filepath.Join(repo, "infrastructure-docker/latest/components.yaml") + "\n" +
		"- name: remote\n  type: InfrastructureProvider\n  url: https://example.com/components.yaml\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	amended, err := AddStartupProbes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(amended) != 4 {
		t.Fatalf("amended %q, want the manager and the proxy in each of the two versions", amended)
	}
	for _, v := range []string{"v1.14.1", "v1.14.2"} {
		b, _ := os.ReadFile(filepath.Join(repo, "infrastructure-docker", v, "components.yaml"))
		if !strings.Contains(string(b), "startupProbe:") {
			t.Errorf("%s not amended", v)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "infrastructure-docker/v1.14.2/metadata.yaml")); string(b) != files["infrastructure-docker/v1.14.2/metadata.yaml"] {
		t.Error("a file that is not the provider's probeComponents file was changed")
	}

	if _, err := AddStartupProbes(filepath.Join(repo, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing config: err = %v, want it named", err)
	}
}
