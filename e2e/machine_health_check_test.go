//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
)

var _ = Describe("When a worker machine fails", func() {
	specs.MachineHealthCheckSpec(func() specs.MachineHealthCheckSpecInput {
		return specs.MachineHealthCheckSpecInput{CommonInput: commonInput(), Mode: specs.WorkerRemediation}
	})
})

var _ = Describe("When a control-plane machine fails", func() {
	specs.MachineHealthCheckSpec(func() specs.MachineHealthCheckSpecInput {
		return specs.MachineHealthCheckSpecInput{CommonInput: commonInput(), Mode: specs.ControlPlaneRemediation}
	})
})

// An instance terminated out of band: with the cloud controller manager
// (DOCKER_CLOUD_PROVIDER=external), its node-lifecycle controller deletes
// the Node, and the MachineHealthCheck replaces the Machine.
var _ = Describe("When a worker machine's instance is terminated", func() {
	specs.MachineHealthCheckSpec(func() specs.MachineHealthCheckSpecInput {
		return specs.MachineHealthCheckSpecInput{CommonInput: commonInput(), Mode: specs.WorkerRemediation, Fault: specs.FaultRemoveContainer}
	})
})
