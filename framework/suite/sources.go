package suite

import (
	"context"

	"github.com/capd-e2e/capd-e2e/framework/sources"
)

// resolveSources resolves the config's release markers and checks its
// http(s) sources (package sources), before anything is created: an
// unreachable one fails setup naming its field.
func (s *setup) resolveSources(ctx context.Context) error {
	report, err := sources.Resolve(ctx, s.env.cfg, sources.Options{})
	for _, line := range report.Lines() {
		s.log("setup: %s", line)
	}
	if err != nil {
		return err
	}
	if len(report.Markers) == 0 && len(report.URLs) == 0 {
		s.log("setup: no release marker to resolve, no http(s) source to check")
	}
	return nil
}
