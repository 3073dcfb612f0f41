package report

import (
	"os"
	"path/filepath"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// StageFailure is the suite report of a job that failed outside the suite
// (a bad config the image step refused, an engine that is down, a suite
// killed before it wrote its reports): one failed test case named after
// the stage, whose message says where the job stopped and detail (the end
// of the stage's output).
func StageFailure(job, stage, detail string, start, end time.Time) types.Report {
	msg := job + " failed at: " + stage
	if detail != "" {
		msg += "\n" + detail
	}
	return types.Report{
		SuiteDescription: job,
		SuiteSucceeded:   false,
		StartTime:        start,
		EndTime:          end,
		RunTime:          end.Sub(start),
		SpecReports: types.SpecReports{{
			ContainerHierarchyTexts: []string{job},
			LeafNodeType:            types.NodeTypeIt,
			LeafNodeText:            stage,
			State:                   types.SpecStateFailed,
			StartTime:               start,
			EndTime:                 end,
			RunTime:                 end.Sub(start),
			Failure:                 types.Failure{Message: msg, FailureNodeType: types.NodeTypeIt},
			ReportEntries:           types.ReportEntries{{Name: stageEntry, Value: types.WrapEntryValue(stage), Time: end}},
		}},
	}
}

// stageEntry is the report entry naming a StageFailure's stage, its
// failing phase.
const stageEntry = "capd-e2e-stage"

// WriteMissing writes what Write would of the reports the artifacts folder
// lacks (missing or empty): the fallback of a job whose suite did not
// write them. The reports the suite wrote are left as they are.
func WriteMissing(in Input) error {
	if in.JUnitFile == "" {
		in.JUnitFile = JUnitFile
	}
	missing := func(name string) bool {
		fi, err := os.Stat(filepath.Join(in.ArtifactFolder, name))
		return err != nil || fi.Size() == 0
	}
	want := map[string]bool{}
	for _, name := range []string{in.JUnitFile, MetadataFile, HTMLFile} {
		want[name] = missing(name)
	}
	if !want[in.JUnitFile] && !want[MetadataFile] && !want[HTMLFile] {
		return nil
	}
	return write(in, want)
}
