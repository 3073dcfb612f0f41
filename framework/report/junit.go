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
	if len(suites.TestSuites) != 1 || len(suites.TestSuites[0].TestCases) != len(rep.SpecReports) {
		return nil, fmt.Errorf("ginkgo's JUnit report has %d suites, not one with a test case per spec report (%d)", len(suites.TestSuites), len(rep.SpecReports))
	}
	suite := &suites.TestSuites[0]
	for _, s := range run.Specs {
		if !s.Failed {
			continue
		}
		tc := &suite.TestCases[s.index]
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
