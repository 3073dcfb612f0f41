package report

import (
	"fmt"
	"maps"
)

// Metadata keys metadata.json always has; Input.Versions adds its own.
const (
	MetaRunID        = "capd-e2e-run-id"
	MetaResult       = "capd-e2e-result"
	MetaFailingPhase = "capd-e2e-failing-phase"
	MetaFailedSpecs  = "capd-e2e-failed-specs"
)

// Metadata is metadata.json: flat string values, as Prow's sidecar merges
// the file's top-level keys into finished.json's metadata and TestGrid
// shows string values as columns.
func Metadata(run Run) map[string]string {
	m := map[string]string{
		MetaRunID:  run.ID,
		MetaResult: run.Result,
	}
	maps.Copy(m, run.Versions)
	failed, total := 0, 0
	for _, s := range run.Specs {
		if s.SuiteNode {
			continue // setup and teardown: not specs
		}
		total++
		if s.Failed {
			failed++
		}
	}
	m[MetaFailedSpecs] = fmt.Sprintf("%d of %d", failed, total)
	if run.Failing != "" {
		m[MetaFailingPhase] = run.Failing
	}
	return m
}
