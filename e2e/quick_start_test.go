//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

var _ = Describe("When following the quick-start", func() {
	specs.QuickStartSpec(func() specs.QuickStartSpecInput {
		return specs.QuickStartSpecInput{CommonInput: commonInput()}
	})
})
