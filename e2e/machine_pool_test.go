//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

var _ = Describe("When scaling a MachinePool", func() {
	specs.MachinePoolSpec(func() specs.MachinePoolSpecInput {
		return specs.MachinePoolSpecInput{CommonInput: commonInput()}
	})
})
