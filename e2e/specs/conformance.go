package specs

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/conformance"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/mirror"
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
	// KUBETEST_CONFIGURATION (the dual-stack spec's:
	// KUBETEST_DUALSTACK_CONFIGURATION).
	ConfigurationPath string

	// GinkgoNodes is how many ginkgo processes run the tests in parallel
	// ([Serial] tests run alone, after the others). If unset, the variable
	// KUBETEST_GINKGO_NODES, else 1.
	GinkgoNodes int

	// Image is the conformance image. If unset, the config's for the
	// version (build.kubernetes[].conformance.image).
	Image string

	// RejectUnservedServiceTraffic makes every machine reject traffic to
	// the cluster's Service CIDRs that kube-proxy did not translate to an
	// endpoint, before the run (rejectUnservedServiceTraffic): for a
	// network that answers connections to any address, as some CI VMs'
	// transparent proxies do. If false, the variable
	// CONFORMANCE_REJECT_UNSERVED_SERVICE_TRAFFIC ("true" turns it on).
	RejectUnservedServiceTraffic bool
}

// varRejectUnservedServiceTraffic turns
// ConformanceInput.RejectUnservedServiceTraffic on from the config.
const varRejectUnservedServiceTraffic = "CONFORMANCE_REJECT_UNSERVED_SERVICE_TRAFFIC"

// runConformance runs the conformance suite of version against the
// workload cluster in a container of the engine (framework/conformance),
// bounded by the interval wait-conformance, its output and JUnit in
// <cluster artifacts>/kubetest, the JUnit also at the top of the
// artifacts as upstream's runner leaves it. A failed test fails the spec
// with the failed tests named.
func (r *run) runConformance(ctx context.Context, in ConformanceInput, version string, workers int) {
	// Each spec gives its own default: KUBETEST_CONFIGURATION for the
	// conformance specs.
	cfgPath := in.ConfigurationPath
	Expect(cfgPath).ToNot(BeEmpty(), "%s: the conformance input's ConfigurationPath", r.spec)
	title := "run Kubernetes conformance " + version
	if base := filepath.Base(cfgPath); !strings.HasPrefix(base, "conformance") {
		// Another selection of e2e.test's tests (dualstack.yaml).
		title = fmt.Sprintf("run Kubernetes' e2e tests %s of %s", base, version)
	}
	r.step(title, func() {
		flags, err := conformance.ReadConfig(cfgPath)
		Expect(err).ToNot(HaveOccurred(), "%s: the e2e.test flags", r.spec)
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
		m := r.mirrorTestImages(ctx, version)
		if in.RejectUnservedServiceTraffic || r.in.E2EConfig.GetVariableOrEmpty(varRejectUnservedServiceTraffic) == "true" {
			r.rejectUnservedServiceTraffic(ctx)
		}
		defer func() {
			if pulls := m.Pulls(); len(pulls) > 0 {
				r.summary.Set("conformance image pulls", formatPulls(pulls))
			}
			if err := m.Close(); err != nil {
				fmt.Fprintf(GinkgoWriter, "conformance: stop the image mirror: %v\n", err)
			}
		}()
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
		// A test that passed on a retry (ginkgo.flake-attempts) counts as
		// passed, and is named: a flake is a finding, not a pass to hide.
		if len(res.Flaked) > 0 {
			lines := make([]string, len(res.Flaked))
			for i, f := range res.Flaked {
				first, _, _ := strings.Cut(f.Message, "\n")
				lines[i] = fmt.Sprintf("%s: passed on attempt %d; first failure: %s", f.Name, f.Attempts, first)
			}
			r.summary.Set("conformance flaked tests", strings.Join(lines, "\n"))
		}
		if res.Tests > 0 {
			flaked := fmt.Sprintf("%d of them flaked", len(res.Flaked))
			if res.FlakesUnknown != "" {
				flaked = "flakes unknown: " + res.FlakesUnknown
			}
			r.summary.Set("conformance result", fmt.Sprintf("%d tests: %d passed (%s), %d failed, %d skipped in %s (log %s)",
				res.Tests, res.Passed, flaked, res.Failed, res.Skipped, res.Duration.Round(time.Second), rel(r.in.ArtifactFolder, res.Log)))
		}
		Expect(err).ToNot(HaveOccurred(), "%s: Kubernetes %s conformance", r.spec, version)
	})
}

// mirrorTestImages serves the e2e test images of version's conformance
// suite to the workload cluster's nodes under their upstream names
// (framework/mirror), on the gateway of the nodes' network. The nodes
// hold the images already (testImages); the mirror is for the tests
// that pull with imagePullPolicy Always, which otherwise fail where the
// nodes reach no registry.
func (r *run) mirrorTestImages(ctx context.Context, version string) *mirror.Mirror {
	images := strings.Fields(r.in.E2EConfig.GetVariableOrEmpty(config.ConformanceTestImagesVariable(version)))
	Expect(images).ToNot(BeEmpty(), "%s: variable %s is unset", r.spec, config.ConformanceTestImagesVariable(version))
	engine, ok := r.in.Runtime.(mirror.Engine)
	Expect(ok).To(BeTrue(), "%s: the input's Runtime cannot save images or copy into containers (it is a %T)", r.spec, r.in.Runtime)
	nodes := r.runningMachines(ctx)
	d, err := r.in.Runtime.InspectContainer(ctx, nodes[0])
	Expect(err).ToNot(HaveOccurred(), "%s: inspect machine %s", r.spec, nodes[0])
	gateway := d.Networks[conformance.DefaultNetwork].GatewayIPv4
	Expect(gateway).ToNot(BeEmpty(), "%s: machine %s has no IPv4 gateway on network %s: %+v", r.spec, nodes[0], conformance.DefaultNetwork, d.Networks)
	m, err := mirror.Start(ctx, mirror.Input{Runtime: engine, Images: images, Address: gateway})
	Expect(err).ToNot(HaveOccurred(), "%s: serve the conformance test images to the nodes", r.spec)
	if err := m.Configure(ctx, nodes...); err != nil {
		_ = m.Close() // undoing the mirror; err is the failure to report
		Expect(err).ToNot(HaveOccurred(), "%s: name the image mirror in the nodes", r.spec)
	}
	hosts := m.Hosts()
	var served []string
	for _, reg := range slices.Sorted(maps.Keys(hosts)) {
		served = append(served, reg+" at "+hosts[reg])
	}
	r.summary.Set("conformance image mirror", fmt.Sprintf("%d images, %s, in %d machines", len(images), strings.Join(served, ", "), len(nodes)))
	return m
}

// UnservedServiceTable is the nftables table of
// rejectUnservedServiceTraffic in the machines.
const UnservedServiceTable = "capd-e2e-unserved-services"

// rejectUnservedServiceTraffic adds, in every running machine of the
// cluster, an nftables table (UnservedServiceTable) that rejects packets
// forwarded or sent to one of the cluster's Service CIDRs that still have
// that address after kube-proxy's DNAT. Its chains hook forward and
// output just before the filter table (priority filter - 10), after the
// nat table: a packet to a port a Service serves has the endpoint's
// address by then and passes; only a packet kube-proxy left alone (a
// port the Service does not have) matches. A table of its own, because
// the CNI (kube-router) keeps an ACCEPT for pod traffic first in the
// filter table's FORWARD chain, which a rule there would come after,
// while a reject in any base chain is final.
//
// In iptables mode kube-proxy leaves such packets to the node's default
// route (its nftables mode rejects them itself): on a cloud network or a
// laptop they are dropped, and the conformance test "should serve
// endpoints on same port and different protocols" sees the removed port
// fail. On a network that answers every TCP connection, as the
// transparent proxy of some CI VMs does, the connection succeeds and the
// test fails for a reason outside the cluster; the table makes the nodes
// refuse what that network would drop. It is in the machines only, which
// the cluster's deletion removes.
func (r *run) rejectUnservedServiceTraffic(ctx context.Context) {
	var cluster clusterv1.Cluster
	Expect(r.in.BootstrapClusterProxy.GetClient().Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, &cluster)).
		To(Succeed(), "%s: get cluster %s", r.spec, r.clusterName)
	cidrs := cluster.Spec.ClusterNetwork.Services.CIDRBlocks
	Expect(cidrs).ToNot(BeEmpty(), "%s: cluster %s has no spec.clusterNetwork.services.cidrBlocks", r.spec, r.clusterName)
	script, err := UnservedServiceRules(cidrs)
	Expect(err).ToNot(HaveOccurred(), "%s: cluster %s's Service CIDRs", r.spec, r.clusterName)
	nodes := r.runningMachines(ctx)
	for _, node := range nodes {
		var out strings.Builder
		res, err := r.in.Runtime.Exec(ctx, node, runtime.ExecOptions{Cmd: []string{"nft", "-f", "-"}, Stdin: strings.NewReader(script), Stdout: &out, Stderr: &out})
		Expect(err).ToNot(HaveOccurred(), "%s: add nftables table %s to machine %s", r.spec, UnservedServiceTable, node)
		Expect(res.ExitCode).To(BeZero(), "%s: add nftables table %s to machine %s: %s", r.spec, UnservedServiceTable, node, out.String())
	}
	r.summary.Set("conformance unserved Service traffic", fmt.Sprintf("rejected in %d machines for %s (%s, nftables table %s)",
		len(nodes), strings.Join(cidrs, ", "), varRejectUnservedServiceTraffic, UnservedServiceTable))
}

// UnservedServiceRules returns the nftables script (`nft -f -`) of
// rejectUnservedServiceTraffic: it replaces UnservedServiceTable, so a
// second run leaves one table, with a forward and an output chain each
// rejecting every CIDR of cidrs (ip or ip6 by its family). A CIDR that
// does not parse is an error naming it.
func UnservedServiceRules(cidrs []string) (string, error) {
	var rules strings.Builder
	for _, c := range cidrs {
		prefix, err := netip.ParsePrefix(c)
		if err != nil {
			return "", fmt.Errorf("service CIDR %q: %w", c, err)
		}
		family := "ip"
		if prefix.Addr().Is6() {
			family = "ip6"
		}
		fmt.Fprintf(&rules, "\t\t%s daddr %s reject comment \"capd-e2e: reject unserved Service traffic\"\n", family, prefix.Masked())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "add table inet %[1]s\ndelete table inet %[1]s\ntable inet %[1]s {\n", UnservedServiceTable)
	for _, hook := range []string{"forward", "output"} {
		fmt.Fprintf(&b, "\tchain %[1]s {\n\t\ttype filter hook %[1]s priority filter - 10; policy accept;\n%[2]s\t}\n", hook, rules.String())
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// runningMachines returns the names of the cluster's running machines,
// its load balancer left out.
func (r *run) runningMachines(ctx context.Context) []string {
	list, err := r.in.Runtime.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: r.clusterName}, Running: true})
	Expect(err).ToNot(HaveOccurred(), "%s: list the machines of %s", r.spec, r.clusterName)
	var nodes []string
	for _, c := range list {
		if c.Labels[runtime.LabelRole] != runtime.RoleExternalLoadBalancer {
			nodes = append(nodes, c.Name)
		}
	}
	Expect(nodes).ToNot(BeEmpty(), "%s: no running machine of %s", r.spec, r.clusterName)
	return nodes
}

// formatPulls lists the images pulled from the mirror, with how often.
func formatPulls(pulls map[string]int) string {
	var out []string
	for _, ref := range slices.Sorted(maps.Keys(pulls)) {
		out = append(out, fmt.Sprintf("%s (%d)", ref, pulls[ref]))
	}
	return strings.Join(out, ", ")
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
	return preloadWith(r.in.E2EConfig.GetVariableOrEmpty(varDockerPreloadImages), strings.Fields(list)...)
}
