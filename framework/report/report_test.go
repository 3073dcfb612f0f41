package report

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

func readJUnit(t *testing.T, root string) reporters.JUnitTestSuites {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var s reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJUnitFailureTextFirst(t *testing.T) {
	root, rep := fixture(t, true)
	if err := Write(Input{Report: rep, ArtifactFolder: root, RunID: "abc123"}); err != nil {
		t.Fatal(err)
	}
	suites := readJUnit(t, root)
	tc := suites.TestSuites[0].TestCases[1]
	if tc.Failure == nil {
		t.Fatalf("the failed spec has no <failure>: %+v", tc)
	}
	d := tc.Failure.Description
	want := []string{
		"quick-start failed in phase: " + failedPhase + " (failed after 2m0s)",
		"cluster: " + failedCluster + " in namespace quick-start-abc123",
		"Cluster " + failedCluster + ": Available=False (NotAvailable): * ControlPlaneAvailable: control plane not initialized",
		"Machine " + brokenMachine + ": Ready=False (NotReady)",
		"machines not Ready: " + brokenMachine,
		brokenMachine + ": exited, exit code 137, OOM killed",
		"clusters/" + failedCluster + "/summary.txt",
		"clusters/" + failedCluster + "/containers.txt",
		"clusters/" + failedCluster + "/machines/" + brokenMachine + "/kubelet.log",
		"clusters/bootstrap/logs/capd-system/capd-controller-manager/manager.log",
		// Ginkgo's own description follows.
		"Timed out after 120.000s.",
	}
	last := -1
	for _, w := range want {
		i := strings.Index(d, w)
		if i < 0 {
			t.Errorf("failure text lacks %q:\n%s", w, d)
			continue
		}
		if i < last {
			t.Errorf("failure text has %q out of order:\n%s", w, d)
		}
		last = i
	}
	if strings.Contains(d, "Paused") {
		t.Errorf("a healthy condition (Paused=False) is reported as unhealthy:\n%s", d)
	}
	if !strings.HasPrefix(tc.Failure.Message, "["+failedPhase+"] ") {
		t.Errorf("failure message %q does not start with the phase", tc.Failure.Message)
	}
	if len(suites.TestSuites[0].TestCases) != 3 || suites.Failures != 1 {
		t.Errorf("suites: %d test cases, %d failures; want 3, 1", len(suites.TestSuites[0].TestCases), suites.Failures)
	}
}

func TestJUnitInterruptedIsAFailure(t *testing.T) {
	root, rep := fixture(t, true)
	rep.SpecReports[1].State = types.SpecStateInterrupted
	rep.SpecReports[1].Failure.Message = "Interrupted by User"
	if err := Write(Input{Report: rep, ArtifactFolder: root}); err != nil {
		t.Fatal(err)
	}
	suites := readJUnit(t, root)
	tc := suites.TestSuites[0].TestCases[1]
	if tc.Error != nil || tc.Failure == nil || tc.Failure.Type != "interrupted" {
		t.Fatalf("interrupted spec: error %+v, failure %+v; want a <failure type=interrupted>", tc.Error, tc.Failure)
	}
	if !strings.HasPrefix(tc.Failure.Description, "quick-start failed in phase: "+failedPhase) {
		t.Errorf("interrupted spec's text:\n%s", tc.Failure.Description)
	}
	if suites.Errors != 0 || suites.Failures != 1 || suites.TestSuites[0].Errors != 0 || suites.TestSuites[0].Failures != 1 {
		t.Errorf("counts: errors %d/%d failures %d/%d", suites.Errors, suites.TestSuites[0].Errors, suites.Failures, suites.TestSuites[0].Failures)
	}
}

func TestJUnitSetupFailure(t *testing.T) {
	root, rep := fixture(t, false)
	// Setup failed in its second phase: its summary says so.
	data, _ := os.ReadFile(filepath.Join(root, "setup", "summary.json"))
	s := strings.Replace(string(data), `"name":"create the kind cluster","start":"2026-12-04T10:00:01Z","duration":30000000000,"result":"passed"`,
		`"name":"create the kind cluster","start":"2026-12-04T10:00:01Z","duration":30000000000,"result":"failed","error":"kind: node did not boot"`, 1)
	s = strings.Replace(s, `"result":"passed","start"`, `"result":"failed","failure":{"phase":"create the kind cluster","message":"kind: node did not boot"},"start"`, 1)
	if err := os.WriteFile(filepath.Join(root, "setup", "summary.json"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	rep.SuiteSucceeded = false
	rep.SpecReports[0].State = types.SpecStateFailed
	rep.SpecReports[0].Failure = types.Failure{Message: "suite setup\nUnexpected error: create the kind cluster: kind: node did not boot"}
	rep.SpecReports = rep.SpecReports[:1]
	if err := Write(Input{Report: rep, ArtifactFolder: root}); err != nil {
		t.Fatal(err)
	}
	tc := readJUnit(t, root).TestSuites[0].TestCases[0]
	if tc.Failure == nil || !strings.HasPrefix(tc.Failure.Description, "suite setup failed in phase: create the kind cluster (failed after 30s)\n  kind: node did not boot\n") {
		t.Fatalf("setup failure: %+v", tc.Failure)
	}
	if strings.Contains(tc.Failure.Description, "conditions:") {
		t.Errorf("setup has no cluster, yet its failure speaks of conditions:\n%s", tc.Failure.Description)
	}
	var meta map[string]string
	data, _ = os.ReadFile(filepath.Join(root, MetadataFile))
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if meta[MetaFailingPhase] != "[SynchronizedBeforeSuite]: create the kind cluster" {
		t.Errorf("metadata failing phase = %q", meta[MetaFailingPhase])
	}
}

func TestMetadata(t *testing.T) {
	root, rep := fixture(t, true)
	in := Input{Report: rep, ArtifactFolder: root, RunID: "abc123", Versions: map[string]string{"cluster-api-version": "v1.14.2"}}
	if err := Write(in); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]string // flat strings: what TestGrid shows
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatalf("metadata.json is not a flat object of strings: %v\n%s", err, data)
	}
	want := map[string]string{
		MetaRunID:             "abc123",
		MetaResult:            "FAILED",
		MetaFailedSpecs:       "1 of 1",
		MetaFailingPhase:      "When following the Cluster API quick-start Should create a workload cluster: " + failedPhase,
		"cluster-api-version": "v1.14.2",
	}
	for k, v := range want {
		if meta[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, meta[k], v)
		}
	}
}

func TestHTMLNamesOnlyExistingArtifacts(t *testing.T) {
	root, rep := fixture(t, true)
	run := Build(Input{Report: rep, ArtifactFolder: root})
	for _, s := range run.Specs {
		for _, sum := range s.Summaries {
			if sum.Err != "" {
				t.Errorf("summary %s: %s", sum.Path, sum.Err)
			}
			for _, f := range append(append([]string{}, sum.Key...), sum.All...) {
				if fi, err := os.Stat(filepath.Join(root, f)); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("artifact %s is not a file: %v", f, err)
				}
			}
		}
	}
	if len(run.Specs) != 2 {
		t.Errorf("%d specs in the report, want setup and the spec run (not the skipped one)", len(run.Specs))
	}
}

func TestBarsToScale(t *testing.T) {
	root, rep := fixture(t, false)
	run := Build(Input{Report: rep, ArtifactFolder: root})
	b := bars(run.Specs[1].Summaries[0].Summary)
	// 4 minutes: a minute at +1m is 25% at 25%.
	if got := b[2]; got.Left != 25 || got.Width != 50 {
		t.Errorf("phase 3 bar: left %.2f width %.2f, want 25 and 50", got.Left, got.Width)
	}
	if got := b[0]; got.Width != minWidth {
		t.Errorf("a 200 ms phase of 4 minutes: width %.3f, want the minimum %.1f", got.Width, minWidth)
	}
}

// TestKeyArtifactsOfAConformanceRun: a conformance run's output and JUnit
// are among a spec's key artifacts (the failure text lists them); its
// kubeconfig and e2e.test's other output are not.
func TestKeyArtifactsOfAConformanceRun(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join("clusters", "k8s-conformance-x1")
	for _, f := range []string{"summary.json", "summary.txt", "kubetest/e2e.log", "kubetest/junit_kubetest.k8s-conformance-x1.01.xml",
		"kubetest/config/kubeconfig", "kubetest/e2e-output/out.txt"} {
		p := filepath.Join(root, dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := loadSummary(root, dir).Key
	want := []string{dir + "/summary.txt", dir + "/kubetest/e2e.log", dir + "/kubetest/junit_kubetest.k8s-conformance-x1.01.xml"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("key artifacts = %q, want %q", got, want)
	}
}

func TestStageFailureNamesTheStage(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 6, 16, 0, 0, 0, time.UTC)
	in := Input{Report: StageFailure("capd-e2e run", "provide the images", "no such step", start, start.Add(time.Minute)), ArtifactFolder: dir, RunID: "r1"}
	if err := WriteMissing(in); err != nil {
		t.Fatal(err)
	}
	junit, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<failure message="[provide the images] capd-e2e run failed at: provide the images`, "no such step"} {
		if !strings.Contains(string(junit), want) {
			t.Errorf("JUnit lacks %q:\n%s", want, junit)
		}
	}
	meta, err := os.ReadFile(filepath.Join(dir, MetadataFile))
	if err != nil || !strings.Contains(string(meta), `"capd-e2e-failing-phase": "capd-e2e run provide the images: provide the images"`) {
		t.Errorf("metadata.json: %v\n%s", err, meta)
	}
	// What the suite wrote stays.
	if err := os.WriteFile(filepath.Join(dir, JUnitFile), []byte("<suite's/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, HTMLFile)); err != nil {
		t.Fatal(err)
	}
	if err := WriteMissing(in); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, JUnitFile)); string(b) != "<suite's/>" {
		t.Errorf("WriteMissing replaced the suite's JUnit report: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, HTMLFile)); err != nil {
		t.Errorf("WriteMissing did not write the missing report.html: %v", err)
	}
}

// fullDisk makes osWriteFile fail with ENOSPC, leaving half the data
// behind as a full disk does, while the reserve file exists in dir.
func fullDisk(t *testing.T, dir string) {
	t.Helper()
	real := osWriteFile
	t.Cleanup(func() { osWriteFile = real })
	osWriteFile = func(name string, data []byte, perm os.FileMode) error {
		if _, err := os.Stat(filepath.Join(dir, ReserveFile)); err == nil {
			if err := real(name, data[:len(data)/2], perm); err != nil {
				return err
			}
			return &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
		}
		return real(name, data, perm)
	}
}

func TestWriteFreesTheReserveWhenTheDiskIsFull(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ReserveFile), make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	fullDisk(t, dir)
	data := []byte("<testsuites></testsuites>\n")
	if err := writeFile(dir, "junit.xml", data); err != nil {
		t.Fatalf("with a reserve to free: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "junit.xml")); err != nil || string(got) != string(data) {
		t.Errorf("junit.xml = %q, %v; want it whole", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ReserveFile)); !os.IsNotExist(err) {
		t.Errorf("the reserve is still there (%v): nothing was freed", err)
	}
}

func TestWriteWithoutAReserveReportsTheFullDisk(t *testing.T) {
	dir := t.TempDir()
	real := osWriteFile
	t.Cleanup(func() { osWriteFile = real })
	osWriteFile = func(name string, data []byte, perm os.FileMode) error {
		if err := real(name, data[:1], perm); err != nil {
			return err
		}
		return &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
	}
	err := writeFile(dir, "metadata.json", []byte("{}\n"))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "metadata.json") {
		t.Errorf("error = %v; want ENOSPC naming metadata.json", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "metadata.json")); !os.IsNotExist(err) {
		t.Errorf("a partial metadata.json was left (%v)", err)
	}
}

// A test case Ginkgo's report lacks (or names otherwise) costs only its
// own enrichment: the failed spec's is found by name, not by position.
func TestJUnitEnrichesEachTestCaseByName(t *testing.T) {
	root, rep := fixture(t, true)
	dir := t.TempDir()
	if err := reporters.GenerateJUnitReport(rep, filepath.Join(dir, "junit.xml")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatal(err)
	}
	cases := suites.TestSuites[0].TestCases
	failed := cases[1].Name
	suites.TestSuites[0].TestCases = cases[1:] // the first spec's test case is missing
	enrich(&suites, rep, Build(Input{Report: rep, ArtifactFolder: root}))
	for _, tc := range suites.TestSuites[0].TestCases {
		enriched := tc.Failure != nil && strings.HasPrefix(tc.Failure.Message, "["+failedPhase+"] ")
		if enriched != (tc.Name == failed) {
			t.Errorf("test case %q: enriched %v, want %v", tc.Name, enriched, tc.Name == failed)
		}
	}
}
