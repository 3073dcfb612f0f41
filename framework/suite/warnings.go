package suite

import (
	"regexp"

	"github.com/go-logr/logr"
)

// capdDeprecation is the API server's warning for CAPD's Docker* kinds,
// deprecated for the Dev* kinds capd-e2e's templates use: the ownership
// check's graph discovery (clusterctl's, also under upstream's
// AssertOwnerReferences) lists every kind of the provider inventory, and
// controller-runtime logs each kind's warning, 30 lines in one
// quick-start.
var capdDeprecation = regexp.MustCompile(`^infrastructure\.cluster\.x-k8s\.io/v1beta[0-9]+ Docker[A-Za-z]* is deprecated$`)

// withoutCAPDDeprecations returns log dropping those warnings, and only
// those: the suite's controller-runtime logger, through which its clients'
// warning logger writes (a context without a logger of its own gets it),
// so every other warning still shows.
func withoutCAPDDeprecations(log logr.Logger) logr.Logger {
	return logr.New(dropSink{log.GetSink(), capdDeprecation})
}

// dropSink passes on every log line but the Info lines whose message
// matches drop.
type dropSink struct {
	logr.LogSink
	drop *regexp.Regexp
}

func (s dropSink) Info(level int, msg string, kv ...any) {
	if !s.drop.MatchString(msg) {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s dropSink) WithValues(kv ...any) logr.LogSink {
	return dropSink{s.LogSink.WithValues(kv...), s.drop}
}

func (s dropSink) WithName(name string) logr.LogSink {
	return dropSink{s.LogSink.WithName(name), s.drop}
}
