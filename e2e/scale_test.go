//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

// Upstream's scale spec on the in-memory backend, at upstream's suite's
// size unless CAPI_SCALE_* says otherwise.
var _ = Describe("When creating, upgrading and deleting many in-memory clusters", Label(specs.LabelClusterClass, specs.LabelInMemory), func() {
	specs.ScaleSpec(func() specs.ScaleSpecInput {
		return specs.ScaleSpecInput{CommonInput: commonInput()}
	})
})
