package specs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/cluster-api/util"

	"github.com/capd-e2e/capd-e2e/framework/controllerlogs"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// ClusterctlUpgradeSpecInput is the input of ClusterctlUpgradeSpec.
type ClusterctlUpgradeSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals (a backstop: each wait is bounded).
	Timeout time.Duration

	// NewManagementCluster creates the management cluster the spec
	// initialises with the older providers, named name, and returns its
	// proxy and how to delete it (delete is called at the end of the
	// spec's cleanup, also when NewManagementCluster failed, if it
	// returned one). The cluster must run both releases' controller images
	// without pulling, and a working cert-manager (clusterctl before v1.14
	// installs its own unless one answers).
	// suite.Environment.CreateManagementCluster makes such a cluster;
	// ClusterctlUpgradeInputFrom sets this to it. Required.
	NewManagementCluster func(ctx context.Context, name string) (proxy framework.ClusterProxy, delete func(context.Context) error, err error)

	// InitWithBinary is the path of the older release's clusterctl, which
	// runs `clusterctl init` (upstream's field of the same name takes a
	// URL; the harness downloads or builds the binary at setup, see
	// build.clusterAPI.previous.clusterctl). Required.
	InitWithBinary string

	// InitWithCoreProvider, InitWithBootstrapProviders,
	// InitWithControlPlaneProviders and InitWithInfrastructureProvider are
	// the older providers, as clusterctl init takes them
	// ("cluster-api:v1.13.4", "kubeadm:v1.13.4", "docker:v1.13.4"), in the
	// repository of ClusterctlConfigPath. Core and infrastructure are
	// required; bootstrap and control plane default to kubeadm at the core
	// provider's version.
	InitWithCoreProvider           string
	InitWithBootstrapProviders     []string
	InitWithControlPlaneProviders  []string
	InitWithInfrastructureProvider string

	// UpgradeToContract is the contract `clusterctl upgrade apply` moves
	// every provider to the newest version of. If unset, "v1beta2".
	UpgradeToContract string

	// Flavor is the workload cluster's template flavor, which both
	// releases must be able to run. If unset, "topology" (a Cluster of a
	// ClusterClass, as upstream's clusterctl upgrade tests on the
	// current release use).
	Flavor *string

	// ControlPlaneMachineCount and WorkerMachineCount are the workload
	// cluster's machines. If unset, 1 each.
	ControlPlaneMachineCount *int64
	WorkerMachineCount       *int64

	// PreInit is called with the new management cluster before clusterctl
	// init, PostUpgrade after clusterctl upgrade, as upstream's. If
	// unset, nothing is called.
	PreInit     func(managementClusterProxy framework.ClusterProxy)
	PostUpgrade func(managementClusterProxy framework.ClusterProxy, workloadClusterNamespace, workloadClusterName string)
}

// ClusterctlUpgradeInputFrom returns the input of ClusterctlUpgradeSpec
// for the suite's environment: the common input, a new kind management
// cluster per spec (env.CreateManagementCluster), and the previous
// release's clusterctl and providers as setup prepared them
// (build.clusterAPI.previous; its fields are left empty when setup did
// not prepare it, and the spec then fails naming them).
func ClusterctlUpgradeInputFrom(env *suite.Environment) ClusterctlUpgradeSpecInput {
	in := ClusterctlUpgradeSpecInput{
		CommonInput: CommonInputFrom(env),
		NewManagementCluster: func(ctx context.Context, name string) (framework.ClusterProxy, func(context.Context) error, error) {
			m, err := env.CreateManagementCluster(ctx, name)
			if m == nil {
				return nil, nil, err
			}
			return m.Proxy, m.Delete, err
		},
	}
	if p := env.PreviousRelease(); p != nil {
		in.InitWithBinary = p.Clusterctl
		in.InitWithCoreProvider = p.CoreProvider
		in.InitWithBootstrapProviders = []string{p.BootstrapProvider}
		in.InitWithControlPlaneProviders = []string{p.ControlPlaneProvider}
		in.InitWithInfrastructureProvider = p.InfrastructureProvider
	}
	return in
}

// specClusterctlUpgrade is the clusterctl upgrade spec's name, and its
// facts.
var specClusterctlUpgrade = declare(specFacts{
	name: "clusterctl-upgrade", label: LabelClusterctlUpgrade,
	variables:       []string{varKubernetesVersion},
	previousRelease: true,
	waits: slices.Concat(
		// The management cluster's cert-manager substitute Available,
		// clusterctl init.
		[]string{"wait-controllers", "wait-controllers"}, creationWaits,
		// clusterctl upgrade, the CRDs migrated, the window without a
		// rollout, the MachineDeployment scaled to 2 and back to 1.
		[]string{"wait-controllers", "wait-crd-migration", "check-no-rollout", "wait-worker-nodes", "wait-worker-nodes"},
		healthWaits),
	// The scaling loop waits twice on one line.
	files: []string{"clusterctl_upgrade.go"},
})

// ClusterctlUpgradeSpec is the path every Cluster API user takes at a
// release: it creates a management cluster of its own (a kind cluster:
// one container instead of a workload cluster's three, on a 2-core CI
// machine; NewManagementCluster), runs `clusterctl init` there with the
// older release's clusterctl and providers, creates a workload cluster
// with them, then runs `clusterctl upgrade apply` (the clusterctl under
// test, as a library) to the newest providers of UpgradeToContract. It
// checks that every provider is at its newest version after the upgrade
// and was at its older one before; that every Cluster API CRD's stored
// versions were migrated to its storage version alone, with the CRD
// migrator's annotation at the CRD's generation (upstream's
// ValidateCRDMigration's CRD checks); that no Machine of the workload
// cluster was replaced by the upgrade, the same Machines by UID, for a
// window (check-no-rollout) well past the new controllers' first
// reconciles (upstream sleeps three minutes and compares names once);
// then it scales the cluster's MachineDeployment to 2 and back to 1 with
// the new controllers, checks the Cluster Available and its Machines
// Ready and, in its cleanup, deletes the cluster and then the management
// cluster. Owner references and finalizers are checked once, before the
// deletion, with the current release's assertions.
//
// The summary records the provider versions and the Machines' UIDs before
// and after the upgrade.
//
// Spec name: "clusterctl-upgrade". Intervals: those of the quick-start,
// plus wait-controllers (init, upgrade), wait-crd-migration and
// check-no-rollout.
func ClusterctlUpgradeSpec(inputGetter func() ClusterctlUpgradeSpecInput) {
	It("upgrades the providers of a management cluster with clusterctl upgrade, without rolling out its workload cluster",
		Label(LabelClusterctlUpgrade, LabelClusterctl),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := start(specCtx, specClusterctlUpgrade, in.CommonInput, in.Timeout)
			r.step("check the upgrade's input", func() {
				Expect(in.NewManagementCluster).ToNot(BeNil(), "%s: NewManagementCluster is required", r.spec)
				Expect(in.InitWithBinary).ToNot(BeEmpty(), "%s: InitWithBinary is required (with the harness's suite: build.clusterAPI.previous in the e2e config)", r.spec)
				Expect(in.InitWithBinary).To(BeAnExistingFile(), "%s: InitWithBinary", r.spec)
				Expect(in.InitWithCoreProvider).ToNot(BeEmpty(), "%s: InitWithCoreProvider is required", r.spec)
				Expect(in.InitWithInfrastructureProvider).ToNot(BeEmpty(), "%s: InitWithInfrastructureProvider is required", r.spec)
			})
			u := &upgradeRun{run: r, in: in}
			u.defaults()

			r.step("create the management cluster", func() {
				name := fmt.Sprintf("%s-%s", r.spec, util.RandomString(6))
				proxy, del, err := in.NewManagementCluster(ctx, name)
				if del != nil {
					r.last = append(r.last, func(ctx context.Context) {
						if proxy != nil && CurrentSpecReport().Failed() {
							r.tryStep("cleanup: dump the management cluster's CRDs, webhooks and certificates", func() error {
								dumpManagementCluster(ctx, proxy, filepath.Join(r.in.ArtifactFolder, "clusters", name, "resources"))
								return nil
							})
						}
						r.tryStep("cleanup: delete the management cluster "+name, func() error { return del(ctx) })
					})
				}
				Expect(err).ToNot(HaveOccurred(), "create the management cluster %s", name)
				Expect(proxy).ToNot(BeNil(), "NewManagementCluster returned no proxy")
				r.summary.Set("management cluster", name)
				// From here on the spec's objects live there: the
				// namespace, the Cluster, the cleanup's dumps.
				r.in.BootstrapClusterProxy, r.mgmt = proxy, proxy
				r.in.InfrastructureProvider = &in.InitWithInfrastructureProvider
			})
			r.createNamespace(ctx)
			proxy := r.mgmt

			if in.PreInit != nil {
				r.step("pre-init hook", func() { in.PreInit(proxy) })
			}
			r.step("clusterctl init with "+u.version(in.InitWithCoreProvider), func() {
				u.init(ctx, proxy)
			})
			r.step("stream the controllers' logs", func() {
				u.watchControllers(ctx, proxy)
			})
			before := u.providerVersions(ctx, proxy)
			r.summary.Set("providers before the upgrade", before.String())
			r.step("check the providers' versions before the upgrade", func() {
				Expect(before.versions()).To(ConsistOf(u.version(in.InitWithCoreProvider)),
					"every provider at %s after clusterctl init: %s", u.version(in.InitWithCoreProvider), before)
			})

			res := r.createCluster(ctx, createOptions{
				flavor:            deref(in.Flavor, "topology"),
				kubernetesVersion: r.variable(varKubernetesVersion),
				controlPlaneCount: deref(in.ControlPlaneMachineCount, 1),
				workerCount:       deref(in.WorkerMachineCount, 1),
				skipOwnership:     true,
			})
			machines := u.machines(ctx, proxy.GetClient())
			r.summary.Set("machines before the upgrade", machines.String())

			r.step("clusterctl upgrade apply to contract "+u.contract, func() {
				clusterctl.UpgradeManagementClusterAndWait(ctx, clusterctl.UpgradeManagementClusterAndWaitInput{
					ClusterProxy:         proxy,
					ClusterctlConfigPath: r.in.ClusterctlConfigPath,
					Contract:             u.contract,
					LogFolder:            r.bootstrapDir(),
				}, r.intervals("wait-controllers")...)
			})
			after := u.providerVersions(ctx, proxy)
			r.summary.Set("providers after the upgrade", after.String())
			r.step("check the providers' versions after the upgrade", func() {
				want := u.newest()
				Expect(after.refs()).To(ConsistOf(want), "every provider at its newest version of contract %s", u.contract)
				for _, p := range after {
					Expect(p.version).ToNot(Equal(before.of(p.name)), "%s was not upgraded", p.name)
				}
			})
			if in.PostUpgrade != nil {
				r.step("post-upgrade hook", func() { in.PostUpgrade(proxy, r.namespace, r.clusterName) })
			}
			r.step("check the CRDs' stored versions were migrated", func() {
				u.checkCRDMigration(ctx, proxy.GetClient())
			})
			r.step("check that no Machine is rolled out", func() {
				// The upgraded controllers reconcile every object once their
				// caches sync: a change of template or spec hash between the
				// releases makes the KubeadmControlPlane or a
				// MachineDeployment replace Machines within a reconcile or
				// two. Polled every few seconds, so that a Machine that
				// comes and goes is seen too.
				timeout, poll := r.durations("check-no-rollout")
				Consistently(ctx, func() machineSet {
					return u.machines(ctx, proxy.GetClient())
				}).WithTimeout(timeout).WithPolling(poll).Should(Equal(machines), "the Machines (by UID) changed after the upgrade")
				r.summary.Set("machines after the upgrade", u.machines(ctx, proxy.GetClient()).String())
			})
			r.step("scale the MachineDeployment to 2 and back to 1 with the upgraded providers", func() {
				Expect(res.Cluster.Spec.Topology.IsDefined()).To(BeTrue(), "the flavor %q must make a Cluster of a ClusterClass", deref(in.Flavor, "topology"))
				for _, n := range []int32{2, 1} {
					framework.ScaleAndWaitMachineDeploymentTopology(ctx, framework.ScaleAndWaitMachineDeploymentTopologyInput{
						ClusterProxy:              proxy,
						Cluster:                   res.Cluster,
						Replicas:                  n,
						WaitForMachineDeployments: r.intervals("wait-worker-nodes"),
					})
				}
			})
			r.verifyClusterHealthy(ctx, proxy)
		})
}

// upgradeRun is one run of ClusterctlUpgradeSpec.
type upgradeRun struct {
	*run
	in       ClusterctlUpgradeSpecInput
	contract string
}

func (u *upgradeRun) defaults() {
	v := u.version(u.in.InitWithCoreProvider)
	if len(u.in.InitWithBootstrapProviders) == 0 {
		u.in.InitWithBootstrapProviders = []string{"kubeadm:" + v}
	}
	if len(u.in.InitWithControlPlaneProviders) == 0 {
		u.in.InitWithControlPlaneProviders = []string{"kubeadm:" + v}
	}
	u.contract = u.in.UpgradeToContract
	if u.contract == "" {
		u.contract = clusterv1.GroupVersion.Version
	}
}

// version is the version of a "name:version" provider reference.
func (u *upgradeRun) version(ref string) string {
	_, v, _ := strings.Cut(ref, ":")
	return v
}

// init runs the older clusterctl's init on the management cluster, with
// the version check off (it would ask GitHub), waiting for the providers
// within the wait-controllers interval. Its output goes to
// clusterctl-init.log in the management cluster's folder.
func (u *upgradeRun) init(ctx context.Context, proxy framework.ClusterProxy) {
	timeout, _ := u.durations("wait-controllers")
	args := []string{"init", "--config", u.in.ClusterctlConfigPath, "--kubeconfig", proxy.GetKubeconfigPath(),
		"--core", u.in.InitWithCoreProvider,
		"--bootstrap", strings.Join(u.in.InitWithBootstrapProviders, ","),
		"--control-plane", strings.Join(u.in.InitWithControlPlaneProviders, ","),
		"--infrastructure", u.in.InitWithInfrastructureProvider,
		"--wait-providers", "--wait-provider-timeout", strconv.Itoa(int(timeout.Seconds()))}
	// clusterctl bounds its wait by the flag; the context is the backstop
	// for everything before it (a cert-manager that does not answer).
	ctx, cancel := context.WithTimeout(ctx, 2*timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, u.in.InitWithBinary, args...)
	cmd.Env = append(os.Environ(), "CLUSTERCTL_DISABLE_VERSIONCHECK=true")
	cmd.WaitDelay = 10 * time.Second
	fmt.Fprintf(GinkgoWriter, "%s %s\n", u.in.InitWithBinary, strings.Join(args, " "))
	out, err := cmd.CombinedOutput()
	log := filepath.Join(u.bootstrapDir(), "clusterctl-init.log")
	Expect(os.MkdirAll(filepath.Dir(log), 0o755)).To(Succeed())
	Expect(os.WriteFile(log, out, 0o644)).To(Succeed())
	if err != nil && ctx.Err() != nil {
		err = errors.Join(err, context.Cause(ctx))
	}
	Expect(err).ToNot(HaveOccurred(), "%s init failed (output in %s); its last lines:\n%s", u.in.InitWithBinary, log, lastLines(out, 20))
}

// watchControllers streams the logs of every provider controller of the
// management cluster into its folder until the spec's cleanup, the
// upgraded controllers' Pods too (same Deployments).
func (u *upgradeRun) watchControllers(ctx context.Context, proxy framework.ClusterProxy) {
	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// First of the last: before the management cluster is deleted.
	u.last = append([]func(context.Context){func(context.Context) { cancel() }}, u.last...)
	for _, d := range framework.GetControllerDeployments(ctx, framework.GetControllerDeploymentsInput{Lister: proxy.GetClient()}) {
		Expect(controllerlogs.Watch(watchCtx, controllerlogs.Input{
			ClientSet:  proxy.GetClientSet(),
			Deployment: d,
			LogPath:    filepath.Join(u.bootstrapDir(), "logs", d.Namespace),
		})).To(Succeed())
	}
}

// provider is an installed provider as clusterctl records it.
type provider struct{ name, version string }

// providerList is the providers of a management cluster, sorted.
type providerList []provider

func (l providerList) String() string { return strings.Join(l.refs(), ", ") }

// refs returns "name:version" of each, name being clusterctl's
// "<type>/<name>" reference without the type for core ("cluster-api").
func (l providerList) refs() []string {
	var out []string
	for _, p := range l {
		out = append(out, p.name+":"+p.version)
	}
	return out
}

func (l providerList) versions() []string {
	var out []string
	for _, p := range l {
		out = append(out, p.version)
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

func (l providerList) of(name string) string {
	for _, p := range l {
		if p.name == name {
			return p.version
		}
	}
	return ""
}

// providerVersions lists the providers clusterctl installed (its Provider
// objects).
func (u *upgradeRun) providerVersions(ctx context.Context, proxy framework.ClusterProxy) providerList {
	list := &clusterctlv1.ProviderList{}
	Expect(proxy.GetClient().List(ctx, list)).To(Succeed(), "list clusterctl's Provider objects")
	var out providerList
	for _, p := range list.Items {
		out = append(out, provider{name: strings.ToLower(p.Type) + "/" + p.ProviderName, version: p.Version})
	}
	slices.SortFunc(out, func(a, b provider) int { return strings.Compare(a.name, b.name) })
	return out
}

// newest is what providerVersions must say after the upgrade: each
// installed provider at its newest version of the contract in the e2e
// config.
func (u *upgradeRun) newest() []string {
	var out []string
	for _, p := range []struct{ typ, name string }{
		{"coreprovider", u.in.InitWithCoreProvider},
		{"bootstrapprovider", u.in.InitWithBootstrapProviders[0]},
		{"controlplaneprovider", u.in.InitWithControlPlaneProviders[0]},
		{"infrastructureprovider", u.in.InitWithInfrastructureProvider},
	} {
		name, _, _ := strings.Cut(p.name, ":")
		latest := u.in.E2EConfig.GetProviderLatestVersionsByContract(u.contract, name)
		Expect(latest).To(HaveLen(1), "the e2e config has no version of provider %s of contract %s", name, u.contract)
		_, v, _ := strings.Cut(latest[0], ":")
		out = append(out, p.typ+"/"+name+":"+v)
	}
	return out
}

// machineSet is the workload cluster's Machines, "name uid" each, sorted.
type machineSet []string

func (m machineSet) String() string { return strings.Join(m, ", ") }

func (u *upgradeRun) machines(ctx context.Context, c client.Reader) machineSet {
	list := &clusterv1.MachineList{}
	Expect(c.List(ctx, list, client.InNamespace(u.namespace), u.clusterLabels())).To(Succeed())
	var out machineSet
	for _, m := range list.Items {
		out = append(out, m.Name+" "+string(m.UID))
	}
	slices.Sort(out)
	return out
}

// clusterctlInventoryCRD is clusterctl's own CRD (its Provider objects),
// which clusterctl installs and no provider's CRD migrator handles.
const clusterctlInventoryCRD = "providers.clusterctl.cluster.x-k8s.io"

// checkCRDMigration waits (wait-crd-migration) for every CRD of a Cluster
// API group (*.cluster.x-k8s.io; not clusterctl's inventory, as upstream's
// filter leaves it out) to have been migrated: status.storedVersions
// is exactly its storage version, and Cluster API's CRD migrator recorded
// the CRD's generation in its annotation. It is upstream's
// ValidateCRDMigration's CRD check, bounded by the config's interval.
func (u *upgradeRun) checkCRDMigration(ctx context.Context, c client.Reader) {
	timeout, poll := u.durations("wait-crd-migration")
	Eventually(ctx, func(g Gomega) {
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		g.Expect(c.List(ctx, crds)).To(Succeed())
		n := 0
		for _, crd := range crds.Items {
			if !strings.HasSuffix(crd.Name, ".cluster.x-k8s.io") || crd.Name == clusterctlInventoryCRD {
				continue
			}
			n++
			storage := ""
			for _, v := range crd.Spec.Versions {
				if v.Storage {
					storage = v.Name
				}
			}
			g.Expect(crd.Status.StoredVersions).To(Equal([]string{storage}), "CRD %s: status.storedVersions", crd.Name)
			g.Expect(crd.Annotations).To(HaveKeyWithValue(clusterv1.CRDMigrationObservedGenerationAnnotation, strconv.FormatInt(crd.Generation, 10)),
				"CRD %s: the CRD migrator's annotation", crd.Name)
		}
		g.Expect(n).To(BeNumerically(">", 0), "no Cluster API CRD found")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// dumpManagementCluster writes what tells why providers did not come up
// or an upgrade broke them, as upstream's clusterctl upgrade spec dumps on
// its way out: the CRDs (stored versions, conversion webhooks), the webhook
// configurations (caBundles) and cert-manager's Issuers and Certificates.
func dumpManagementCluster(ctx context.Context, proxy framework.ClusterProxy, dir string) {
	gvk := func(group, version, kind string) framework.DumpNamespaceAndGVK {
		return framework.DumpNamespaceAndGVK{GVK: schema.GroupVersionKind{Group: group, Version: version, Kind: kind}}
	}
	framework.DumpResourcesForCluster(ctx, framework.DumpResourcesForClusterInput{
		Lister:  proxy.GetClient(),
		LogPath: dir,
		Resources: []framework.DumpNamespaceAndGVK{
			gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
			gvk("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
			gvk("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"),
			gvk("cert-manager.io", "v1", "Issuer"),
			gvk("cert-manager.io", "v1", "Certificate"),
		},
	})
}

// lastLines returns the last n lines of out.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
