package suite

import (
	"context"

	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
	"github.com/capd-e2e/capd-e2e/framework/sources"
)

// resolveSources resolves the config's release markers and checks its
// http(s) sources (package sources), before anything is created: an
// unreachable one fails setup naming its field. Upstream's view of the
// config is then derived again, so that it carries the resolved versions.
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
	e2e, err := upstream.E2EConfig(s.env.cfg, s.renderDir)
	if err != nil {
		return err
	}
	s.env.E2EConfig = e2e
	return nil
}
