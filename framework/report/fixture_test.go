package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/capd-e2e/capd-e2e/framework/summary"
)

// t0 is when the fixture runs started.
var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

const (
	failedCluster = "quick-start-x1y2z3"
	failedPhase   = "wait for the control plane to be initialized"
	brokenMachine = "quick-start-x1y2z3-cp-abcde"
)

// fixture writes an artifacts folder as a run leaves it and returns
// Ginkgo's report of that run: setup, then one spec, failed in its third
// phase when failed is set.
func fixture(t *testing.T, failed bool) (string, types.Report) {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSummary := func(dir string, s summary.Summary) string {
		t.Helper()
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.Join(dir, summary.JSONFile)
		write(rel, string(data))
		var text strings.Builder
		_ = s.WriteText(&text)
		write(filepath.Join(dir, summary.TextFile), text.String())
		return rel
	}

	setup := summary.Summary{
		Spec: "suite setup", Result: summary.ResultPassed, Start: t0, Duration: 60 * time.Second,
		Phases: []summary.Phase{
			{Name: "load config", Start: t0, Duration: 100 * time.Millisecond, Result: summary.ResultPassed},
			{Name: "create the kind cluster", Start: t0.Add(time.Second), Duration: 30 * time.Second, Result: summary.ResultPassed},
			{Name: "clusterctl init", Start: t0.Add(31 * time.Second), Duration: 29 * time.Second, Result: summary.ResultPassed},
		},
	}
	setupRel := writeSummary("setup", setup)

	start := t0.Add(time.Minute)
	dir := filepath.Join("clusters", failedCluster)
	spec := summary.Summary{
		Spec: "quick-start", Result: summary.ResultPassed, Start: start, Duration: 4 * time.Minute,
		Attributes: []summary.Attribute{
			{Key: "namespace", Value: "quick-start-abc123"},
			{Key: "cluster", Value: failedCluster},
			{Key: "management cluster", Value: "bootstrap"},
		},
		Phases: []summary.Phase{
			{Name: "create namespace", Start: start, Duration: 200 * time.Millisecond, Result: summary.ResultPassed},
			{Name: "apply cluster template", Start: start.Add(time.Second), Duration: 59 * time.Second, Result: summary.ResultPassed},
			{Name: failedPhase, Start: start.Add(time.Minute), Duration: 2 * time.Minute, Result: summary.ResultPassed},
			{Name: "cleanup: delete cluster", Start: start.Add(3 * time.Minute), Duration: time.Minute, Result: summary.ResultPassed},
		},
		Objects: []summary.Object{
			{Kind: "Cluster", Namespace: "quick-start-abc123", Name: failedCluster, Conditions: []summary.Condition{
				{Type: "Available", Status: "True"}, {Type: "Paused", Status: "False"},
			}},
			{Kind: "Machine", Namespace: "quick-start-abc123", Name: brokenMachine, Conditions: []summary.Condition{
				{Type: "Ready", Status: "True"},
			}},
		},
		Snapshot: &summary.Snapshot{Path: filepath.Join(dir, "containers.txt"), Containers: []summary.Container{
			{Name: brokenMachine, Role: "control-plane", State: "running"},
			{Name: failedCluster + "-lb", Role: "external-load-balancer", State: "running"},
		}},
	}
	specState := types.SpecStatePassed
	var failure types.Failure
	if failed {
		specState = types.SpecStateFailed
		spec.Result = summary.ResultFailed
		spec.Phases[2].Result = summary.ResultFailed
		spec.Phases[2].Error = "did not complete (the spec failed or timed out here; see Failure)"
		spec.Failure = &summary.Failure{Phase: failedPhase, Message: "Timed out after 120.000s.\ncontrol plane of " + failedCluster + " not initialized", Location: "e2e/specs/waits.go:80"}
		spec.Objects[0].Conditions[0] = summary.Condition{Type: "Available", Status: "False", Reason: "NotAvailable", Message: "* ControlPlaneAvailable: control plane not initialized"}
		spec.Objects[1].Conditions[0] = summary.Condition{Type: "Ready", Status: "False", Reason: "NotReady", Message: "* NodeHealthy: Waiting for a Node with spec.providerID docker:////" + brokenMachine}
		spec.Snapshot.Containers[0] = summary.Container{Name: brokenMachine, Role: "control-plane", State: "exited", ExitCode: 137, OOMKilled: true}
		failure = types.Failure{Message: spec.Failure.Message, Location: types.CodeLocation{FileName: "e2e/specs/waits.go", LineNumber: 80}}
	}
	specRel := writeSummary(dir, spec)
	write(filepath.Join(dir, "containers.txt"), "NAME  STATE\n"+brokenMachine+"  exited\n")
	write(filepath.Join(dir, "machines", brokenMachine, "kubelet.log"), "kubelet log\n")
	write(filepath.Join(dir, "machines", brokenMachine, "container-stdout.log"), "boot log\n")
	write(filepath.Join(dir, "resources", "quick-start-abc123", "Cluster", failedCluster+".yaml"), "kind: Cluster\n")
	write(filepath.Join("clusters", "bootstrap", "logs", "capd-system", "capd-controller-manager", "manager.log"), "capd log\n")
	write("ginkgo-log.txt", "ginkgo\n")
	write(filepath.Join("localhost", "engine-ps.txt"), "CONTAINER ID\n")

	entry := func(rel string) types.ReportEntries {
		return types.ReportEntries{{Name: summary.ReportEntry, Value: types.WrapEntryValue(rel), Visibility: types.ReportEntryVisibilityNever}}
	}
	rep := types.Report{
		SuiteDescription: "capd-e2e",
		SuiteSucceeded:   !failed,
		StartTime:        t0,
		EndTime:          t0.Add(6 * time.Minute),
		RunTime:          6 * time.Minute,
		SpecReports: types.SpecReports{
			{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStatePassed, StartTime: t0, RunTime: time.Minute, ReportEntries: entry(setupRel)},
			{
				ContainerHierarchyTexts: []string{"When following the Cluster API quick-start"},
				LeafNodeText:            "Should create a workload cluster",
				LeafNodeType:            types.NodeTypeIt,
				LeafNodeLabels:          []string{"PR-Blocking"},
				State:                   specState,
				StartTime:               start,
				RunTime:                 4 * time.Minute,
				Failure:                 failure,
				ReportEntries:           entry(specRel),
			},
			{LeafNodeType: types.NodeTypeIt, LeafNodeText: "not selected", State: types.SpecStateSkipped},
		},
	}
	return root, rep
}
