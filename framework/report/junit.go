package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

// JUnit returns Ginkgo's JUnit report of rep with each failed spec's
// failure text first (Spec.Text, then Ginkgo's own description), and an
// interrupted or panicked spec's <error> made a <failure> of the same type
// ("interrupted", "panicked"): Prow's junit lens shows a failure's text
// and hides an error's.
func JUnit(rep types.Report, run Run) ([]byte, error) {
	// Ginkgo writes its report only to a file: to a temporary one, not
	// the artifacts folder, which may be full.
	dir, err := os.MkdirTemp("", "capd-e2e-junit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "junit.xml")
	if err := reporters.GenerateJUnitReportWithConfig(rep, tmp, reporters.JunitReportConfig{}); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		return nil, err
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("read Ginkgo's JUnit report: %w", err)
	}
	enrich(&suites, rep, run)
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(suites); err != nil {
		return nil, err
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}

// enrich puts each failed spec's failure text into its own test case,
// found by the name Ginkgo gives it ("[It] <full text> [labels]"), so
// that a test case Ginkgo renders differently, or not at all, leaves the
// others enriched.
func enrich(suites *reporters.JUnitTestSuites, rep types.Report, run Run) {
	used := map[*reporters.JUnitTestCase]bool{}
	for _, s := range run.Specs {
		if !s.Failed || s.index >= len(rep.SpecReports) {
			continue
		}
		suite, tc := testCaseOf(suites, rep.SpecReports[s.index], s.index, used)
		if tc == nil {
			continue // Ginkgo's own text stays
		}
		used[tc] = true
		if tc.Error != nil {
			tc.Failure = &reporters.JUnitFailure{Message: tc.Error.Message, Type: tc.Error.Type, Description: tc.Error.Description}
			tc.Error = nil
			suite.Errors--
			suite.Failures++
			suites.Errors--
			suites.Failures++
		}
		if tc.Failure == nil {
			continue
		}
		tc.Failure.Message = "[" + s.failingPhase() + "] " + tc.Failure.Message
		tc.Failure.Description = s.Text + "\n" + strings.Repeat("-", 72) + "\n" + tc.Failure.Description
	}
}

// testCaseOf finds sr's test case not used yet: its name is the leaf
// node's type in brackets, the spec's full text, then its labels and
// version constraints in brackets (reporters.GenerateJUnitReportWithConfig).
// The one at the spec report's index comes first (Ginkgo writes a test
// case per spec report, in order), so two specs of one text keep theirs.
func testCaseOf(suites *reporters.JUnitTestSuites, sr types.SpecReport, index int, used map[*reporters.JUnitTestCase]bool) (*reporters.JUnitTestSuite, *reporters.JUnitTestCase) {
	name := strings.TrimSpace(fmt.Sprintf("[%s] %s", sr.LeafNodeType, sr.FullText()))
	named := func(tc *reporters.JUnitTestCase) bool {
		return !used[tc] && (tc.Name == name || strings.HasPrefix(tc.Name, name+" ["))
	}
	if len(suites.TestSuites) == 1 && index < len(suites.TestSuites[0].TestCases) && named(&suites.TestSuites[0].TestCases[index]) {
		return &suites.TestSuites[0], &suites.TestSuites[0].TestCases[index]
	}
	for i := range suites.TestSuites {
		suite := &suites.TestSuites[i]
		for j := range suite.TestCases {
			tc := &suite.TestCases[j]
			if named(tc) {
				return suite, tc
			}
		}
	}
	return nil, nil
}
