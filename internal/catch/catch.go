// Package catch turns the failure of one of upstream's test helpers, which
// fail the Ginkgo way (a Gomega assertion), into an error, for code that
// reports errors (suite setup, the local repository).
package catch

import (
	"fmt"
	"regexp"

	"github.com/onsi/gomega"
)

// ansi matches terminal colour and style codes.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Run runs f and returns its first Gomega failure, with its message, as an
// error, or a panic's value; without terminal codes either way, for a log
// that is not a terminal and a JUnit report. The failure does not fail the
// running Ginkgo node by itself: the caller reports the error. Gomega's
// interception is global: f must be the only code asserting meanwhile.
func Run(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s", ansi.ReplaceAllString(fmt.Sprint(p), ""))
		}
	}()
	if gerr := gomega.InterceptGomegaFailure(f); gerr != nil {
		return fmt.Errorf("%s", ansi.ReplaceAllString(gerr.Error(), ""))
	}
	return nil
}
