package specs

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cluster-api/util/kubeconfig"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/conformance"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/summary"
)

// Variables of the conformance specs, upstream's names.
const (
	// varKubetestConfiguration is the file of e2e.test flags a
	// conformance run uses (a flat YAML map; data/kubetest has ours).
	varKubetestConfiguration = "KUBETEST_CONFIGURATION"
	// varKubetestGinkgoNodes is how many ginkgo processes run the tests
	// in parallel (upstream reads it from the environment; here the
	// environment overrides the config's value, as for every variable).
	varKubetestGinkgoNodes = "KUBETEST_GINKGO_NODES"
)

// ConformanceInput says how a spec runs Kubernetes' conformance suite.
type ConformanceInput struct {
	// ConfigurationPath is the file of e2e.test flags (a flat YAML map,
	// upstream's KUBETEST_CONFIGURATION format), e.g.
	// data/kubetest/conformance-fast.yaml. If unset, the variable
	// KUBETEST_CONFIGURATION.
	ConfigurationPath string

	// GinkgoNodes is how many ginkgo processes run the tests in parallel
	// ([Serial] tests run alone, after the others). If unset, the variable
	// KUBETEST_GINKGO_NODES, else 1.
	GinkgoNodes int

	// Image is the conformance image. If unset, the config's for the
	// version (build.kubernetes[].conformance.image).
	Image string
}

// runConformance runs the conformance suite of version against the
// workload cluster in a container of the engine (framework/conformance),
// bounded by the interval wait-conformance, its output and JUnit in
// <cluster artifacts>/kubetest, the JUnit also at the top of the
// artifacts as upstream's runner leaves it. A failed test fails the spec
// with the failed tests named.
func (r *run) runConformance(ctx context.Context, in ConformanceInput, version string, workers int) {
	r.step("run Kubernetes conformance "+version, func() {
		cfgPath := in.ConfigurationPath
		if cfgPath == "" {
			cfgPath = r.variable(varKubetestConfiguration)
		}
		flags, err := conformance.ReadConfig(cfgPath)
		Expect(err).ToNot(HaveOccurred(), "%s: %s", r.spec, varKubetestConfiguration)
		nodes := in.GinkgoNodes
		if nodes == 0 {
			nodes = 1
			if v := r.in.E2EConfig.GetVariableOrEmpty(varKubetestGinkgoNodes); v != "" {
				nodes, err = strconv.Atoi(v)
				Expect(err).ToNot(HaveOccurred(), "%s: variable %s=%q is not a number", r.spec, varKubetestGinkgoNodes, v)
			}
		}
		Expect(nodes).To(BeNumerically(">", 0), "%s: ginkgo nodes", r.spec)
		image := in.Image
		if image == "" {
			image = r.in.E2EConfig.GetVariableOrEmpty(config.ConformanceImageVariable(version))
		}
		Expect(image).ToNot(BeEmpty(), "%s: no conformance image for %s: give build.kubernetes %s a conformance section, or set the input's Image", r.spec, version, version)
		engine, ok := r.in.Runtime.(conformance.Engine)
		Expect(ok).To(BeTrue(), "%s: the input's Runtime cannot run containers (it is a %T)", r.spec, r.in.Runtime)

		kc, err := kubeconfig.FromSecret(ctx, r.in.BootstrapClusterProxy.GetClient(), types.NamespacedName{Namespace: r.namespace, Name: r.clusterName})
		Expect(err).ToNot(HaveOccurred(), "%s: the workload cluster's kubeconfig", r.spec)
		timeout, _ := r.durations("wait-conformance")
		dir := filepath.Join(r.clusterDir(), "kubetest")
		r.summary.Set("conformance", fmt.Sprintf("%s, %s, %d ginkgo nodes, %d worker nodes, within %s", image, filepath.Base(cfgPath), nodes, workers, timeout))
		res, err := conformance.Run(ctx, conformance.RunInput{
			Runtime:       engine,
			Image:         image,
			Kubeconfig:    kc,
			ArtifactsDir:  dir,
			ClusterName:   r.clusterName,
			Config:        flags,
			GinkgoNodes:   nodes,
			NumberOfNodes: workers,
			Labels:        map[string]string{leak.LabelTrackedCluster: r.clusterName, runtime.LabelCreatedBy: "conformance"},
			Timeout:       timeout,
			Output:        GinkgoWriter,
		})
		// Upstream's layout: the JUnit at the top of the artifacts, where
		// Prow shows each test, whatever the outcome.
		if gerr := conformance.GatherJUnit(r.in.ArtifactFolder, dir); gerr != nil {
			fmt.Fprintf(GinkgoWriter, "conformance: %v\n", gerr)
		}
		if len(res.Failures) > 0 {
			lines := make([]string, len(res.Failures))
			for i, f := range res.Failures {
				first, _, _ := strings.Cut(strings.TrimSpace(f.Message), "\n")
				lines[i] = f.Name + ": " + first
			}
			r.summary.Set(summary.FailedTestsAttribute, strings.Join(lines, "\n"))
		}
		if res.Tests > 0 {
			r.summary.Set("conformance result", fmt.Sprintf("%d tests: %d passed, %d failed, %d skipped in %s (log %s)",
				res.Tests, res.Passed, res.Failed, res.Skipped, res.Duration.Round(time.Second), rel(r.in.ArtifactFolder, res.Log)))
		}
		Expect(err).ToNot(HaveOccurred(), "%s: Kubernetes %s conformance", r.spec, version)
	})
}

// rel returns path relative to base when it is inside it.
func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// testImages is DOCKER_PRELOAD_IMAGES with the e2e test images of
// version's conformance suite added (build.kubernetes[].conformance), as
// a YAML flow list: CAPD loads them from the engine into every machine it
// creates, as the nodes may reach no registry.
func (r *run) testImages(version string) string {
	name := config.ConformanceTestImagesVariable(version)
	list := r.in.E2EConfig.GetVariableOrEmpty(name)
	Expect(list).ToNot(BeEmpty(), "%s: variable %s is unset: the e2e test images of Kubernetes %s's conformance tests (give build.kubernetes %s a conformance section)",
		r.spec, name, version, version)
	return preloadWith(r.in.E2EConfig, strings.Fields(list)...)
}
