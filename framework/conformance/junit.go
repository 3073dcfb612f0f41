package conformance

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

// Failure is one failed test.
type Failure struct {
	// Name is the JUnit test case's name: ginkgo's node type, then the
	// spec's full text, e.g. "[It] [sig-network] DNS should provide DNS
	// for services  [Conformance]", or a setup node's, e.g.
	// "[SynchronizedBeforeSuite]".
	Name string
	// Message is the start of its failure message (maxMessageLines
	// non-empty lines).
	Message string
}

const maxMessageLines = 5

// Flake is a test that failed, then passed on a retry.
type Flake struct {
	// Name is the test's, as in the JUnit ("[It] " and the spec's full
	// text).
	Name string
	// Attempts is how many runs it took to pass.
	Attempts int
	// Message is the start of its first failed attempt's message.
	Message string
}

// readFlakes reads ginkgo's JSON report at path (a list of suite reports,
// ginkgo's types) into r.Flaked: each spec that passed after more than
// one attempt, with its first failure, which ginkgo keeps among the
// spec's additional failures.
func (r *Result) readFlakes(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read ginkgo's JSON report: %w", err)
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return fmt.Errorf("read ginkgo's JSON report %s: %w", path, err)
	}
	r.Flaked = []Flake{}
	for _, rep := range reports {
		for _, s := range rep.SpecReports {
			if s.State != types.SpecStatePassed || s.NumAttempts < 2 {
				continue
			}
			f := Flake{Name: "[" + s.LeafNodeType.String() + "] " + s.FullText(), Attempts: s.NumAttempts}
			if len(s.AdditionalFailures) > 0 {
				msg := s.AdditionalFailures[0].Failure.Message
				// ginkgo's own first line: "Failure recorded during attempt 1:".
				if _, rest, ok := strings.Cut(msg, "\n"); ok && strings.HasPrefix(msg, "Failure recorded during attempt") {
					msg = rest
				}
				f.Message = firstLines(msg)
			}
			r.Flaked = append(r.Flaked, f)
		}
	}
	return nil
}

// readJUnit reads e2e.test's JUnit at path (the format of ginkgo's JUnit
// reporter, whose types it parses with) into r's counts and failures,
// and sets r.JUnit.
func (r *Result) readJUnit(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read e2e.test's JUnit: %w", err)
	}
	r.JUnit = path
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return fmt.Errorf("read e2e.test's JUnit %s: %w", path, err)
	}
	for _, s := range suites.TestSuites {
		for _, tc := range s.TestCases {
			var failure string
			failed := true
			switch {
			case tc.Failure != nil:
				failure = message(tc.Failure.Message, tc.Failure.Description)
			case tc.Error != nil:
				failure = message(tc.Error.Message, tc.Error.Description)
			default:
				failed = false
			}
			if failed {
				r.Failures = append(r.Failures, Failure{Name: tc.Name, Message: failure})
			}
			if suiteNode(tc.Name) {
				continue
			}
			r.Tests++
			switch {
			case failed:
				r.Failed++
			case tc.Skipped != nil:
				r.Skipped++
			default:
				r.Passed++
			}
		}
	}
	return nil
}

// message is the start of a failure's text: its description, which
// begins with the message (e2e.test leaves the message attribute empty,
// so as not to show it twice), else the message.
func message(msg, description string) string {
	if strings.TrimSpace(description) != "" {
		return firstLines(description)
	}
	return firstLines(msg)
}

// suiteNode tells whether a test case is one of the suite's setup or
// teardown nodes, which ginkgo's JUnit reporter lists beside the specs,
// named by their node type in brackets: "[SynchronizedBeforeSuite]",
// "[ReportAfterSuite] Kubernetes e2e suite report".
func suiteNode(name string) bool {
	rest, ok := strings.CutPrefix(name, "[")
	if !ok {
		return false
	}
	typ, _, ok := strings.Cut(rest, "]")
	if !ok {
		return false
	}
	// ginkgo's own names for its node types; an unknown one (a spec's
	// "[sig-node]" when the reporter omits the node type) is invalid.
	b, err := json.Marshal(typ)
	if err != nil {
		return false
	}
	var nt types.NodeType
	return nt.UnmarshalJSON(b) == nil && nt.Is(types.NodeTypesForSuiteLevelNodes)
}

// failureError names each failed test with the start of its message.
func (r Result) failureError() error {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance: %d of %d tests failed", r.Failed, r.Passed+r.Failed)
	if setup := len(r.Failures) - r.Failed; setup > 0 {
		fmt.Fprintf(&b, ", and %d of the suite's setup and teardown nodes", setup)
	}
	fmt.Fprintf(&b, " (%d skipped):\n", r.Skipped)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "- %s\n", f.Name)
		for l := range strings.SplitSeq(f.Message, "\n") {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	fmt.Fprintf(&b, "log: %s, junit: %s", r.Log, r.JUnit)
	return errors.New(b.String())
}

// firstLines returns the first maxMessageLines non-empty lines of s.
func firstLines(s string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if len(out) == maxMessageLines {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// GatherJUnit copies the JUnit files at the top of reportDir to
// artifactsRoot, each "_" in their names turned into ".", as upstream's
// GatherJUnitReports (test/framework/suite_helpers.go) leaves them
// (junit.kubetest.<cluster>.01.xml), where Prow shows each test case.
// Copied, not moved: the run's folder keeps its own. A reportDir that
// does not exist (the run did not start) has none to copy.
func GatherJUnit(artifactsRoot, reportDir string) error {
	entries, err := os.ReadDir(reportDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gather JUnit: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, "junit") || filepath.Ext(name) != ".xml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(reportDir, name))
		if err != nil {
			return fmt.Errorf("gather JUnit: %w", err)
		}
		if err := os.WriteFile(filepath.Join(artifactsRoot, strings.ReplaceAll(name, "_", ".")), data, 0o644); err != nil {
			return fmt.Errorf("gather JUnit: %w", err)
		}
	}
	return nil
}
