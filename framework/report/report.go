// Package report writes what a person triaging a run reads first, from
// Ginkgo's suite report and the specs' summaries (framework/summary), into
// the artifacts folder:
//
//   - the JUnit report, Ginkgo's with each failure's text starting with
//     the failing phase, the cluster, its unhealthy conditions, the
//     machines and containers not running and the artifacts to open; an
//     interrupted or panicked spec is a <failure> too (Prow's junit lens
//     shows a <failure>'s text, not an <error>'s);
//   - metadata.json: the run id, the versions under test and the failing
//     phase, which Prow's sidecar merges into the job's finished.json;
//   - report.html: one self-contained page (no script, no network) with a
//     timeline of each spec's phases drawn to scale, its clusters, machines
//     and containers, the failure in words and links to its artifacts.
//
// The suite (framework/suite) calls Write from its ReportAfterSuite, which
// Ginkgo runs once, on process 1, with every process's specs. A spec names
// its summaries with a report entry (summary.ReportEntry).
//
// When the artifacts folder is full, Write frees the reserve the job left
// for it (ReserveFile, written by capd-e2e run) and tries again, so
// that the JUnit report still reaches Prow; what it could not write it
// says, and returns as an error.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/capd-e2e/capd-e2e/framework/summary"
)

// Files Write creates in the artifacts folder.
const (
	// JUnitFile is the JUnit report's default name, upstream's.
	JUnitFile = "junit.e2e_suite.1.xml"
	// MetadataFile is what Prow's sidecar merges into finished.json.
	MetadataFile = "metadata.json"
	// HTMLFile is the run report.
	HTMLFile = "report.html"
	// ReserveFile is space kept for the reports: a job creates it in the
	// artifacts folder before the suite runs (capd-e2e run, 1 MiB);
	// Write removes it when a write fails for lack of space.
	ReserveFile = ".capd-e2e-reserve"
)

// Input is what Write needs.
type Input struct {
	// Report is Ginkgo's report of the suite (ReportAfterSuite's).
	Report types.Report
	// ArtifactFolder is where the artifacts are, and where Write writes.
	ArtifactFolder string
	// RunID is the run's id.
	RunID string
	// Versions are the versions under test, e.g. "cluster-api" →
	// "v1.14.2", "kubernetes" → "v1.36.3"; metadata.json carries them.
	Versions map[string]string
	// JUnitFile is the JUnit report's name in ArtifactFolder; if empty,
	// JUnitFile.
	JUnitFile string
	// Now is the time the report is taken; if zero, time.Now().
	Now time.Time
}

// Run is a run as the report shows it.
type Run struct {
	ID          string
	Description string
	Result      string // PASSED or FAILED
	Start       time.Time
	Duration    time.Duration
	Versions    map[string]string
	Specs       []Spec
	// Failing is the first failed spec's failing phase, as
	// "<spec>: <phase>"; empty when the run passed.
	Failing string
	// Artifacts are files at the top of the artifacts folder and in
	// localhost/, relative to it.
	Artifacts []string
}

// Spec is one of the suite's specs or setup and teardown nodes.
type Spec struct {
	// Name is the spec's full text, or the node type for a suite node.
	Name   string
	Labels []string
	// SuiteNode is set for setup and teardown (not a spec of the suite).
	SuiteNode bool
	// State is Ginkgo's: passed, failed, interrupted, timedout...
	State    string
	Failed   bool
	Start    time.Time
	Duration time.Duration
	// Message and Location are Ginkgo's failure.
	Message  string
	Location string
	// Text is the failure in words (FailureText of the failing summary,
	// or Ginkgo's message when there is none); empty when passed.
	Text string
	// Summaries are the spec's summaries with the artifacts they name.
	Summaries []Summary

	index int // in the Ginkgo report's SpecReports
	// stage is a StageFailure's stage: its failing phase.
	stage string
}

// Summary is one spec summary and the artifacts of its folder.
type Summary struct {
	// Path is the summary's folder, relative to the artifacts folder.
	Path    string
	Summary summary.Summary
	// Key are the files a person opens first: the summary, the
	// container table, the logs of the machines that are not Ready or
	// whose containers are not running, the controllers' logs. All exist.
	Key []string
	// All are every file under Path.
	All []string
	// Err is why the summary could not be read.
	Err string
}

// FailingPhase is the summary's failing phase, if it failed.
func (s Summary) FailingPhase() string {
	if s.Summary.Failure == nil {
		return ""
	}
	return s.Summary.Failure.Phase
}

// Build reads the summaries the report names and returns the run.
func Build(in Input) Run {
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	rep := in.Report
	run := Run{
		ID:          in.RunID,
		Description: rep.SuiteDescription,
		Result:      "PASSED",
		Start:       rep.StartTime,
		Duration:    rep.RunTime,
		Versions:    in.Versions,
	}
	if run.Duration == 0 && !rep.StartTime.IsZero() {
		run.Duration = now.Sub(rep.StartTime)
	}
	if !rep.SuiteSucceeded {
		run.Result = "FAILED"
	}
	for i, sr := range rep.SpecReports {
		if sr.State.Is(types.SpecStateSkipped | types.SpecStatePending) {
			continue // not run: not worth a section
		}
		s := buildSpec(in.ArtifactFolder, sr)
		s.index = i
		if s.Failed {
			run.Result = "FAILED"
			if run.Failing == "" {
				run.Failing = s.Name + ": " + s.failingPhase()
			}
		}
		run.Specs = append(run.Specs, s)
	}
	run.Artifacts = topArtifacts(in.ArtifactFolder)
	return run
}

func (s Spec) failingPhase() string {
	if s.stage != "" {
		return s.stage
	}
	for _, sum := range s.Summaries {
		if p := sum.FailingPhase(); p != "" {
			return p
		}
	}
	return "(outside any phase)"
}

func buildSpec(root string, sr types.SpecReport) Spec {
	s := Spec{
		Name:      sr.FullText(),
		Labels:    sr.Labels(),
		SuiteNode: sr.LeafNodeType != types.NodeTypeIt,
		State:     sr.State.String(),
		Failed:    sr.Failed(),
		Start:     sr.StartTime,
		Duration:  sr.RunTime,
	}
	if s.Name == "" {
		s.Name = "[" + sr.LeafNodeType.String() + "]"
	}
	if s.Failed {
		s.Message = sr.Failure.Message
		if sr.State == types.SpecStatePanicked && sr.Failure.ForwardedPanic != "" {
			s.Message = strings.TrimSpace(s.Message + "\n" + sr.Failure.ForwardedPanic)
		}
		s.Location = sr.Failure.Location.String()
	}
	for _, e := range sr.ReportEntries {
		if e.Name == stageEntry {
			s.stage = e.Value.String()
		}
		if e.Name != summary.ReportEntry {
			continue
		}
		s.Summaries = append(s.Summaries, loadSummary(root, filepath.Dir(e.Value.String())))
	}
	if s.Failed {
		var texts []string
		for _, sum := range s.Summaries {
			if t := sum.Summary.FailureText(sum.Key); t != "" {
				texts = append(texts, t)
			}
		}
		if len(texts) == 0 {
			texts = append(texts, fmt.Sprintf("%s %s; no spec summary recorded a failing phase", s.Name, s.State))
		}
		s.Text = strings.Join(texts, "\n")
	}
	return s
}

// loadSummary reads dir/summary.json and lists dir's files.
func loadSummary(root, dir string) Summary {
	out := Summary{Path: filepath.ToSlash(dir)}
	data, err := os.ReadFile(filepath.Join(root, dir, summary.JSONFile))
	if err == nil {
		err = json.Unmarshal(data, &out.Summary)
	}
	if err != nil {
		out.Err = err.Error()
		return out
	}
	out.All = files(root, dir)
	has := func(p string) bool { return slices.Contains(out.All, p) }
	for _, name := range []string{summary.TextFile, "containers.txt"} {
		if p := filepath.ToSlash(filepath.Join(dir, name)); has(p) {
			out.Key = append(out.Key, p)
		}
	}
	// A conformance run's output and JUnit (framework/conformance).
	for _, p := range out.All {
		if rel := strings.TrimPrefix(p, filepath.ToSlash(dir)+"/kubetest/"); rel != p && !strings.Contains(rel, "/") &&
			(rel == "e2e.log" || strings.HasPrefix(rel, "junit") && strings.HasSuffix(rel, ".xml")) {
			out.Key = append(out.Key, p)
		}
	}
	// The machines that are not Ready, and the containers not running:
	// their log folders.
	var names []string
	names = append(names, out.Summary.UnhealthyMachines()...)
	for _, c := range out.Summary.NotRunning() {
		names = append(names, c.Name)
	}
	for _, n := range names {
		for _, sub := range []string{"machines", "infrastructure"} {
			for _, f := range machineKeyFiles {
				if p := filepath.ToSlash(filepath.Join(dir, sub, n, f)); has(p) && !slices.Contains(out.Key, p) {
					out.Key = append(out.Key, p)
				}
			}
		}
	}
	// The controllers' logs, one file per container instance.
	if mgmt := out.Summary.Attribute("management cluster"); mgmt != "" {
		for _, f := range files(root, filepath.Join("clusters", mgmt, "logs")) {
			if strings.HasSuffix(f, ".log") {
				out.Key = append(out.Key, f)
			}
		}
	}
	return out
}

// machineKeyFiles are the logs of a machine (framework/logs) that say
// most about why it is not Ready or not running.
var machineKeyFiles = []string{"container-stdout.log", "container-stderr.log", "cloud-init-output.log", "kubelet.log", "crictl-ps.txt"}

// files lists the regular files under dir, relative to root, slash
// separated, sorted.
func files(root, dir string) []string {
	var out []string
	// The callback returns no error, so WalkDir returns none.
	_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if rel, err := filepath.Rel(root, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// topArtifacts lists the files at the top of root and in localhost/.
func topArtifacts(root string) []string {
	var out []string
	for _, dir := range []string{".", "localhost", "setup"} {
		ents, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || e.Name() == ReserveFile || e.Name() == HTMLFile {
				continue
			}
			out = append(out, filepath.ToSlash(filepath.Join(dir, e.Name())))
		}
	}
	return out
}

// Write writes the JUnit report, metadata.json and report.html into the
// artifacts folder. It writes each it can, freeing the reserve when the
// folder is full, and returns what it could not write.
func Write(in Input) error {
	if in.JUnitFile == "" {
		in.JUnitFile = JUnitFile
	}
	return write(in, nil)
}

// write writes the reports want names (every one if want is nil).
func write(in Input, want map[string]bool) error {
	wanted := func(name string) bool { return want == nil || want[name] }
	run := Build(in)
	var errs []error
	// JUnit first: it is what Prow needs most.
	if wanted(in.JUnitFile) {
		if junit, err := JUnit(in.Report, run); err != nil {
			errs = append(errs, fmt.Errorf("JUnit report: %w", err))
		} else {
			errs = append(errs, writeFile(in.ArtifactFolder, in.JUnitFile, junit))
		}
	}
	if wanted(MetadataFile) {
		if meta, err := json.MarshalIndent(Metadata(run), "", "  "); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", MetadataFile, err))
		} else {
			errs = append(errs, writeFile(in.ArtifactFolder, MetadataFile, append(meta, '\n')))
		}
	}
	if wanted(HTMLFile) {
		if html, err := HTML(run); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", HTMLFile, err))
		} else {
			errs = append(errs, writeFile(in.ArtifactFolder, HTMLFile, html))
		}
	}
	return errors.Join(errs...)
}

// writeFile writes name into dir; when the file system is full, it
// removes the reserve and tries once more.
func writeFile(dir, name string, data []byte) error {
	p := filepath.Join(dir, name)
	err := osWriteFile(p, data, 0o644)
	if err != nil && errors.Is(err, syscall.ENOSPC) {
		_ = os.Remove(p) // a partial file, or none: the retry below says which
		if rerr := os.Remove(filepath.Join(dir, ReserveFile)); rerr == nil {
			err = osWriteFile(p, data, 0o644)
		}
	}
	if err != nil {
		_ = os.Remove(p) // what a failed write left is no report; the error says why
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// osWriteFile is os.WriteFile; the unit tests fill the disk through it.
var osWriteFile = os.WriteFile
