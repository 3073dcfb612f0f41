//go:build e2e

// Package e2e is capd-e2e's own suite: the reusable specs of e2e/specs on
// the management cluster that framework/suite sets up from
// config/e2e.yaml. Run it with `make test-e2e`.
package e2e

import (
	"flag"
	"testing"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// e2eSuite holds upstream's flags (-e2e.config, -e2e.artifacts-folder, ...)
// and, once set up, the management cluster.
var e2eSuite = suite.New(flag.CommandLine, suite.Options{DefaultConfig: "../config/e2e.yaml", Requirements: specs.Requirements})

func TestE2E(t *testing.T) { e2eSuite.Run(t, "capd-e2e") }

var _ = e2eSuite.RegisterSetupAndTeardown()

// commonInput is what every spec of this suite gets.
func commonInput() specs.CommonInput { return specs.CommonInputFrom(e2eSuite.Environment()) }
