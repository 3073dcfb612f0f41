package specs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/cluster-api/util"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/snapshot"
	"github.com/capd-e2e/capd-e2e/framework/summary"
)

// CommonInput is what every spec needs; each spec's input embeds it. A suite
// usually fills one CommonInput and reuses it for all its specs.
type CommonInput struct {
	// E2EConfig is upstream's view of config/e2e.yaml (framework/config/upstream
	// builds it). Required. Its intervals set every wait of a spec, looked up
	// as "<spec>/<key>" then "default/<key>"; a wait whose key is in neither
	// fails the spec instead of falling back to a hidden default.
	E2EConfig *clusterctl.E2EConfig

	// ClusterctlConfigPath is the clusterctl config pointing at the local
	// repository that holds the cluster templates. Required; must exist.
	ClusterctlConfigPath string

	// BootstrapClusterProxy is the management cluster the workload clusters
	// are created in. Required.
	BootstrapClusterProxy framework.ClusterProxy

	// ArtifactFolder receives everything a spec leaves behind, in upstream's
	// layout (clusters/<name>/..., clusters/bootstrap/resources/...).
	// Required; created if missing.
	ArtifactFolder string

	// Runtime is the container engine CAPD's machines run in: logs and the
	// container snapshot are read through it, the machine-health-check spec
	// breaks machines through it, and the leak check lists what is left in
	// it. Required (the suite owns it and closes it; specs never do).
	Runtime runtime.Runtime

	// LogCollector collects the machines' logs at the end of a spec. If
	// unset, a logs.Collector with its defaults on Runtime.
	LogCollector *logs.Collector

	// SkipCleanup keeps the workload cluster and its namespace after the
	// spec (logs, resources and the snapshot are still collected, and the
	// leak check is skipped, since everything is left on purpose). If unset,
	// false.
	SkipCleanup bool

	// InfrastructureProvider names the provider whose templates clusterctl
	// uses, e.g. "docker" or "docker:v1.14.2". If unset, the only
	// infrastructure provider installed in the management cluster.
	InfrastructureProvider *string

	// ClusterctlVariables are passed to clusterctl when it renders the
	// cluster template, on top of the config's variables. If unset, none.
	ClusterctlVariables map[string]string

	// PostNamespaceCreated is called after the spec's namespace is created
	// in the management cluster (and, for the self-hosted spec, in the
	// self-hosted cluster too). If unset, nothing is called.
	PostNamespaceCreated func(managementClusterProxy framework.ClusterProxy, workloadClusterNamespace string)

	// CloudControllerManager, if set, is installed for each workload
	// cluster right after its objects are created (framework/ccm for the
	// docker cloud provider; the suite package sets it when the config's
	// DOCKER_CLOUD_PROVIDER is "external", to match the templates'
	// --cloud-provider=external), and the specs check its work. If unset,
	// none is (CAPD initialises the Nodes, as upstream).
	CloudControllerManager CloudControllerManager

	// Tracker records each workload cluster the spec creates, before it is
	// created, so that what it leaves is found and removed even if the run
	// is killed (leak.Tracker; the suite package sets it). If unset,
	// nothing is recorded.
	Tracker ClusterTracker
}

// ClusterTracker records that the run owns a cluster (leak.Tracker).
type ClusterTracker interface {
	Track(ctx context.Context, cluster string) error
}

// Spec timeouts. Ginkgo needs them when the spec tree is built, before the
// config is read, so they are variables a suite may raise (before calling the
// spec) rather than config intervals. Each bounds the spec's It; the cleanup
// has its own CleanupTimeout. The defaults cover the sum of the spec's waits
// at config/e2e.yaml's default intervals.
var (
	// QuickStartTimeout: wait-cluster + 2 × wait-control-plane + wait-worker-nodes.
	QuickStartTimeout = 30 * time.Minute
	// ClusterUpgradeTimeout: the creation above plus wait-machine-upgrade
	// (control plane, kube-proxy, CoreDNS, etcd), wait-machine-deployment-upgrade
	// and wait-nodes-ready.
	ClusterUpgradeTimeout = 90 * time.Minute
	// MachineHealthCheckTimeout: the creation above plus three
	// wait-machine-remediation waits.
	MachineHealthCheckTimeout = 50 * time.Minute
	// SelfHostedTimeout: the creation above, wait-controllers, wait-cluster,
	// check-no-rollout and the moves.
	SelfHostedTimeout = 60 * time.Minute
	// CleanupTimeout bounds a spec's cleanup: log collection (five minutes at
	// most, logs.DefaultTimeout), wait-delete-cluster, the namespace and the
	// leak check, and for the self-hosted spec the move back.
	CleanupTimeout = 25 * time.Minute
)

// Variables the specs read from the e2e config, upstream's names.
const (
	varKubernetesVersion            = "KUBERNETES_VERSION"
	varKubernetesVersionUpgradeFrom = "KUBERNETES_VERSION_UPGRADE_FROM"
	varKubernetesVersionUpgradeTo   = "KUBERNETES_VERSION_UPGRADE_TO"
	varEtcdVersionUpgradeTo         = "ETCD_VERSION_UPGRADE_TO"
	varCoreDNSVersionUpgradeTo      = "COREDNS_VERSION_UPGRADE_TO"
	varDockerPreloadImages          = "DOCKER_PRELOAD_IMAGES"
)

// run is one execution of a spec: its names, where its artifacts go, its
// summary, and where its Cluster currently lives. Nothing in it is a pointer
// to an object that may not exist: cleanup works from names only, so that a
// spec that failed before its Cluster was created cleans up without
// panicking (upstream's AfterEach dereferences a nil Cluster there).
type run struct {
	spec      string
	in        CommonInput
	collector *logs.Collector

	namespace   string
	clusterName string
	summary     *summary.Recorder

	// mgmt is the management cluster that holds the Cluster now: the
	// bootstrap cluster, the self-hosted cluster after a move, or nil when
	// a move back failed and nobody can delete it through the API.
	mgmt framework.ClusterProxy
	// namespaceCreated is set once the namespace exists in the bootstrap
	// cluster.
	namespaceCreated bool
	cancelWatches    context.CancelFunc
}

// begin validates the common input, names the spec's namespace and cluster,
// and registers the cleanup: write the summary (last), then the leak check
// and namespace deletion, then (first) dump, collect, snapshot and delete
// the cluster. Cleanup a spec registers after begin runs before all that.
func begin(ctx context.Context, spec string, in CommonInput) *run {
	// The summary needs only the artifacts folder: with it checked first,
	// even a spec given a bad input leaves a summary saying so.
	Expect(in.ArtifactFolder).ToNot(BeEmpty(), "%s: ArtifactFolder is required", spec)
	Expect(os.MkdirAll(in.ArtifactFolder, 0o755)).To(Succeed(), "%s: cannot create ArtifactFolder", spec)
	r := &run{
		spec:        spec,
		in:          in,
		collector:   in.LogCollector,
		namespace:   fmt.Sprintf("%s-%s", spec, util.RandomString(6)),
		clusterName: fmt.Sprintf("%s-%s", spec, util.RandomString(6)),
		mgmt:        in.BootstrapClusterProxy,
	}
	r.summary = summary.New(spec, r.clusterDir())
	r.summary.Set("namespace", r.namespace)
	r.summary.Set("cluster", r.clusterName)
	r.summary.Set("artifacts", r.clusterDir())
	DeferCleanup(r.writeSummary)

	r.step("check input", func() {
		Expect(in.E2EConfig).ToNot(BeNil(), "%s: E2EConfig is required", spec)
		Expect(in.ClusterctlConfigPath).To(BeAnExistingFile(), "%s: ClusterctlConfigPath must be an existing file", spec)
		Expect(in.BootstrapClusterProxy).ToNot(BeNil(), "%s: BootstrapClusterProxy is required", spec)
		Expect(in.Runtime).ToNot(BeNil(), "%s: Runtime is required", spec)
	})
	if r.collector == nil {
		r.collector = &logs.Collector{Runtime: in.Runtime}
	}
	DeferCleanup(r.finalCleanup, NodeTimeout(CleanupTimeout))
	DeferCleanup(r.clusterCleanup, NodeTimeout(CleanupTimeout))

	r.step("create namespace", func() {
		// The watch must outlive the It (whose context ends with it) to
		// record the deletion's events; finalCleanup cancels it.
		watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r.cancelWatches = cancel
		framework.CreateNamespaceAndWatchEvents(watchCtx, framework.CreateNamespaceAndWatchEventsInput{
			Creator:   in.BootstrapClusterProxy.GetClient(),
			ClientSet: in.BootstrapClusterProxy.GetClientSet(),
			Name:      r.namespace,
			LogFolder: r.bootstrapDir(),
		})
		r.namespaceCreated = true
		if in.PostNamespaceCreated != nil {
			in.PostNamespaceCreated(in.BootstrapClusterProxy, r.namespace)
		}
	})
	return r
}

// clusterDir is where the workload cluster's artifacts go.
func (r *run) clusterDir() string {
	return filepath.Join(r.in.ArtifactFolder, "clusters", r.clusterName)
}

// bootstrapDir is where the management cluster's artifacts go.
func (r *run) bootstrapDir() string {
	return filepath.Join(r.in.ArtifactFolder, "clusters", r.in.BootstrapClusterProxy.GetName())
}

var errAborted = errors.New("did not complete (the spec failed or timed out here; see Failure)")

// step runs f as a phase of the summary. A Gomega failure inside f (a
// panic, the way Ginkgo fails a spec) ends the phase as failed and
// propagates; a phase that never returns (a timed-out wait stuck in a
// helper) stays unfinished.
func (r *run) step(name string, f func()) {
	By(name)
	r.phase(name, f)
}

// phase is step without By, which belongs to the spec's goroutine: for
// steps taken in the background.
func (r *run) phase(name string, f func()) {
	done := r.summary.Phase(name)
	completed := false
	defer func() {
		if completed {
			done(nil)
		} else {
			done(errAborted)
		}
	}()
	f()
	completed = true
}

// tryStep runs f as a best-effort phase: a failure, whether an error, a
// Gomega assertion in an upstream helper or a panic, is recorded in the
// summary and printed, but does not fail the spec. It is for collecting
// artifacts, which must not hide the real failure nor stop the cleanup.
func (r *run) tryStep(name string, f func() error) {
	By(name)
	r.asyncStep(name, func() error {
		var err error
		if gerr := InterceptGomegaFailure(func() { err = f() }); gerr != nil {
			return gerr
		}
		return err
	})
}

// asyncStep is tryStep for a goroutine beside the spec's: f must not
// assert (Gomega's failure interception is not safe for concurrent use),
// only return an error; a panic is recovered and recorded too.
func (r *run) asyncStep(name string, f func() error) {
	done := r.summary.BestEffortPhase(name)
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return f()
	}()
	if err != nil {
		fmt.Fprintf(GinkgoWriter, "%s (best effort) failed: %v\n", name, err)
	}
	done(err)
}

// backgroundFailure carries a failed assertion of a background check out
// of its goroutine.
type backgroundFailure struct{ message string }

// background starts f beside the spec's own steps: a check that depends on
// a state the spec has reached and takes its time, so that it overlaps the
// spec's next waits instead of adding to them. f asserts through g, not
// the global Gomega, and times its phases with step (summary phases,
// announced in the Ginkgo log; not By, which belongs to the spec's
// goroutine). The returned join waits for f as a phase of its own and fails
// the spec there with f's first failure. f's context ends when the spec
// ends, before the cluster cleanup, which waits for f to return.
func (r *run) background(ctx context.Context, name string, f func(ctx context.Context, g Gomega, step func(string, func()))) (join func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var failure string
	g := NewGomega(func(message string, _ ...int) { panic(backgroundFailure{message}) })
	step := func(name string, f func()) {
		fmt.Fprintf(GinkgoWriter, "STEP (in the background): %s\n", name)
		r.phase(name, f)
	}
	go func() {
		defer close(done)
		defer func() {
			switch p := recover().(type) {
			case nil:
			case backgroundFailure:
				failure = p.message
			default:
				failure = fmt.Sprintf("panic: %v", p)
			}
		}()
		f(ctx, g, step)
	}()
	// Registered after begin's cleanups, so it runs before them.
	DeferCleanup(func() {
		cancel()
		<-done
	})
	return func() {
		r.step("wait for the background check: "+name, func() {
			<-done
			Expect(failure).To(BeEmpty(), "%s", name)
		})
	}
}

// intervals returns the spec's [timeout, poll] for key, for upstream
// helpers; it fails the spec when the config has neither
// "<spec>/<key>" nor "default/<key>".
func (r *run) intervals(key string) []any {
	v := r.in.E2EConfig.GetIntervals(r.spec, key)
	Expect(v).To(HaveLen(2), "intervals: set %q or %q to [timeout, poll] in the e2e config", r.spec+"/"+key, "default/"+key)
	return v
}

// durations is intervals parsed, for Eventually and Consistently.
func (r *run) durations(key string) (timeout, poll time.Duration) {
	v := r.intervals(key)
	var err error
	timeout, err = time.ParseDuration(fmt.Sprint(v[0]))
	Expect(err).ToNot(HaveOccurred(), "intervals %s/%s: timeout", r.spec, key)
	poll, err = time.ParseDuration(fmt.Sprint(v[1]))
	Expect(err).ToNot(HaveOccurred(), "intervals %s/%s: poll", r.spec, key)
	return timeout, poll
}

// variable returns a config variable that must be set.
func (r *run) variable(name string) string {
	Expect(r.in.E2EConfig.HasVariable(name)).To(BeTrue(), "%s: the e2e config must set variable %s", r.spec, name)
	return r.in.E2EConfig.MustGetVariable(name)
}

// createOptions says how to create a spec's cluster.
type createOptions struct {
	flavor                  string
	kubernetesVersion       string
	controlPlaneCount       int64
	workerCount             int64
	variables               map[string]string
	waiters                 clusterctl.ControlPlaneWaiters
	postMachinesProvisioned func(managementClusterProxy framework.ClusterProxy, namespace, clusterName string)
	// controlPlaneInitialized, if set, is called once the control plane is
	// initialized, before the spec waits for it to be ready.
	controlPlaneInitialized func()
}

// createCluster renders the template with clusterctl, applies it and waits
// for the cluster, phase by phase (each timed in the summary): the
// infrastructure, the control plane initialised, then ready, the worker
// machines; then it checks the Cluster is Available and every Machine
// Ready. It is upstream's ApplyClusterTemplateAndWait split into phases.
func (r *run) createCluster(ctx context.Context, o createOptions) *clusterctl.ApplyClusterTemplateAndWaitResult {
	proxy := r.in.BootstrapClusterProxy
	infra := clusterctl.DefaultInfrastructureProvider
	if r.in.InfrastructureProvider != nil {
		infra = *r.in.InfrastructureProvider
	}
	vars := map[string]string{}
	for k, v := range r.in.ClusterctlVariables {
		vars[k] = v
	}
	for k, v := range o.variables {
		vars[k] = v
	}
	r.summary.Set("flavor", flavorName(o.flavor))
	r.summary.Set("kubernetes version", o.kubernetesVersion)
	r.summary.Set("machines", fmt.Sprintf("%d control plane, %d workers", o.controlPlaneCount, o.workerCount))

	var yaml []byte
	r.step("generate cluster template", func() {
		yaml = clusterctl.ConfigCluster(ctx, clusterctl.ConfigClusterInput{
			LogFolder:                r.bootstrapDir(),
			ClusterctlConfigPath:     r.in.ClusterctlConfigPath,
			KubeconfigPath:           proxy.GetKubeconfigPath(),
			InfrastructureProvider:   infra,
			Flavor:                   o.flavor,
			Namespace:                r.namespace,
			ClusterName:              r.clusterName,
			KubernetesVersion:        o.kubernetesVersion,
			ControlPlaneMachineCount: &o.controlPlaneCount,
			WorkerMachineCount:       &o.workerCount,
			ClusterctlVariables:      vars,
		})
	})

	res := &clusterctl.ApplyClusterTemplateAndWaitResult{}
	applyIn := clusterctl.ApplyCustomClusterTemplateAndWaitInput{
		ClusterProxy:                 proxy,
		CustomTemplateYAML:           yaml,
		ClusterName:                  r.clusterName,
		Namespace:                    r.namespace,
		Flavor:                       o.flavor,
		WaitForClusterIntervals:      r.intervals("wait-cluster"),
		WaitForControlPlaneIntervals: r.intervals("wait-control-plane"),
		WaitForMachineDeployments:    r.intervals("wait-worker-nodes"),
		ControlPlaneWaiters:          o.waiters,
	}
	if r.in.Tracker != nil {
		r.step("track cluster", func() {
			Expect(r.in.Tracker.Track(ctx, r.clusterName)).To(Succeed())
		})
	}
	r.step("apply cluster template", func() {
		// Retried so that a webhook that is briefly unavailable does not
		// fail the spec; a template that cannot be created is caught by
		// data/templates_test.go long before.
		timeout, poll := r.durations("wait-cluster")
		Expect(proxy.Create(ctx, yaml, framework.CreateWithPolling(timeout, poll))).To(Succeed(), "apply the cluster template")
	})
	if r.in.CloudControllerManager != nil {
		r.installCloudControllerManager(ctx)
	}
	wc := watchClient(proxy)
	r.step("wait for cluster infrastructure", func() {
		res.Cluster = r.waitForClusterProvisioned(ctx, wc)
	})
	r.step("wait for control plane initialized", func() {
		if o.waiters.WaitForControlPlaneInitialized != nil {
			o.waiters.WaitForControlPlaneInitialized(ctx, applyIn, (*clusterctl.ApplyCustomClusterTemplateAndWaitResult)(res))
			return
		}
		res.ControlPlane = r.waitForControlPlaneInitialized(ctx, wc)
	})
	if o.controlPlaneInitialized != nil {
		o.controlPlaneInitialized()
	}
	r.step("wait for control plane ready", func() {
		if o.waiters.WaitForControlPlaneMachinesReady != nil {
			o.waiters.WaitForControlPlaneMachinesReady(ctx, applyIn, (*clusterctl.ApplyCustomClusterTemplateAndWaitResult)(res))
			return
		}
		r.waitForControlPlaneReady(ctx, wc)
	})
	r.step("wait for worker machines", func() {
		res.MachineDeployments = r.waitForWorkers(ctx, wc)
	})
	if o.postMachinesProvisioned != nil {
		r.step("post machines provisioned hook", func() {
			o.postMachinesProvisioned(proxy, r.namespace, r.clusterName)
		})
	}
	r.verifyClusterHealthy(ctx, proxy)
	return res
}

// verifyClusterHealthy checks the Cluster's Available condition and every
// Machine's Ready condition, as seen through proxy (see
// waitForClusterHealthy).
func (r *run) verifyClusterHealthy(ctx context.Context, proxy framework.ClusterProxy) {
	r.step("verify cluster available and machines ready", func() {
		r.waitForClusterHealthy(ctx, watchClient(proxy))
	})
}

func flavorName(f string) string {
	if f == "" {
		return "(default)"
	}
	return f
}

// clusterExists reports whether the Cluster object exists in the cluster
// that holds it now. It is false when it was never created or its holder is
// unknown.
func (r *run) clusterExists(ctx context.Context) bool {
	if r.mgmt == nil || !r.namespaceCreated {
		return false
	}
	err := r.mgmt.GetClient().Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, &clusterv1.Cluster{})
	return err == nil
}

// clusterCleanup collects everything worth keeping, then deletes the
// cluster. Collection is best effort; deletion failing fails the spec.
// The container snapshot and the machines' logs (this module's code,
// through the runtime) are taken while upstream's dumps read the API
// servers: the two share nothing.
func (r *run) clusterCleanup(ctx SpecContext) {
	exists := r.clusterExists(ctx)
	collected := map[string]bool{} // the containers whose logs were collected
	var containers sync.WaitGroup
	containers.Go(func() {
		// The snapshot first: it records the containers as the spec left
		// them, before the log collection.
		n := 0
		r.asyncStep("cleanup: container snapshot", func() error {
			s, err := snapshot.Take(ctx, r.in.Runtime, snapshot.Filter{Cluster: r.clusterName})
			n = len(s.Containers)
			if serr := s.Save(r.clusterDir()); serr != nil {
				err = errors.Join(err, serr)
			}
			var table strings.Builder
			_ = s.WriteTable(&table)
			r.summary.SetSnapshot(summary.Snapshot{Path: filepath.Join("clusters", r.clusterName, snapshot.TableFile), Table: table.String()})
			return err
		})
		if n > 0 {
			r.asyncStep("cleanup: collect machine logs", func() error {
				return r.collector.CollectClusterExcept(ctx, r.clusterName, r.clusterDir(), collected)
			})
		}
	})
	if exists {
		r.tryStep("cleanup: describe cluster", func() error {
			framework.DescribeCluster(ctx, framework.DescribeClusterInput{
				ClusterctlConfigPath: r.in.ClusterctlConfigPath,
				LogFolder:            r.clusterDir(),
				KubeConfigPath:       r.mgmt.GetKubeconfigPath(),
				Namespace:            r.namespace,
				Name:                 r.clusterName,
			})
			return nil
		})
		r.tryStep("cleanup: record conditions", func() error {
			r.summary.SetObjects(r.conditions(ctx))
			return nil
		})
	}
	if r.namespaceCreated && r.mgmt != nil {
		r.tryStep("cleanup: dump management resources", func() error {
			framework.DumpAllResources(ctx, framework.DumpAllResourcesInput{
				Lister:               r.mgmt.GetClient(),
				KubeConfigPath:       r.mgmt.GetKubeconfigPath(),
				ClusterctlConfigPath: r.in.ClusterctlConfigPath,
				Namespace:            r.namespace,
				LogPath:              filepath.Join(r.bootstrapDir(), "resources"),
			})
			return nil
		})
	}
	if exists {
		r.tryStep("cleanup: dump workload pods and nodes", func() error {
			wl := r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
			defer wl.Dispose(ctx)
			// Upstream's dump retries for half a minute against an API
			// server that is not there yet (a spec that failed or was
			// interrupted before the control plane came up): ask once,
			// briefly, first.
			if err := apiServerAnswers(ctx, wl.GetRESTConfig()); err != nil {
				return fmt.Errorf("not dumped: the workload cluster's API server does not answer: %w", err)
			}
			framework.DumpResourcesForCluster(ctx, framework.DumpResourcesForClusterInput{
				Lister:  wl.GetClient(),
				LogPath: filepath.Join(r.clusterDir(), "resources"),
				Resources: []framework.DumpNamespaceAndGVK{
					{GVK: corev1.SchemeGroupVersion.WithKind("Pod")},
					{GVK: corev1.SchemeGroupVersion.WithKind("Node")},
				},
			})
			return nil
		})
	}
	containers.Wait()
	if exists {
		// CAPD goes on creating machines until the cluster is deleted: a
		// spec that failed or was interrupted while one was being provisioned
		// may find its container only now. Its logs would go with it.
		r.collectLateMachines(ctx, collected, false, "cleanup: collect logs of late machines")
	}

	if r.in.SkipCleanup || !exists {
		return
	}
	r.step("cleanup: delete cluster", func() {
		// CAPD may still create a machine's container while the cluster is
		// deleted (the Machines go last); catch its logs before it goes.
		defer r.catchLateMachines(ctx, collected)()
		c := r.mgmt.GetClient()
		cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.clusterName}}
		Expect(client.IgnoreNotFound(c.Delete(ctx, cluster))).To(Succeed(), "delete Cluster %s/%s", r.namespace, r.clusterName)
		Expect(r.waitForClusterGone(ctx, watchClient(r.mgmt))).To(Succeed())
	})
	if r.in.CloudControllerManager != nil {
		r.step("cleanup: uninstall the cloud controller manager", func() {
			removed, err := r.in.CloudControllerManager.Uninstall(ctx, r.clusterName)
			Expect(err).ToNot(HaveOccurred())
			if len(removed) > 0 {
				// Services of type LoadBalancer the spec did not delete.
				r.summary.Set("load balancers removed with the cluster", strings.Join(removed, ", "))
			}
		})
	}
}

// apiServerAnswerTimeout bounds the probe of apiServerAnswers.
const apiServerAnswerTimeout = 5 * time.Second

// apiServerAnswers asks the API server of cfg for its version, waiting at
// most apiServerAnswerTimeout.
func apiServerAnswers(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = apiServerAnswerTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, apiServerAnswerTimeout)
	defer cancel()
	_, err = cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	return err
}

// collectLateMachines collects the logs of the cluster's containers that
// appeared after the first collection (collected names those it covered;
// it is updated). With running, only running containers count (one that is
// only created has nothing to collect yet). It records a phase only when
// there are such containers. It does not assert, so it may run beside the
// spec's goroutine.
func (r *run) collectLateMachines(ctx context.Context, collected map[string]bool, running bool, phase string) {
	list, err := r.in.Runtime.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelCluster: r.clusterName}, Running: running})
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(GinkgoWriter, "%s: list the cluster's containers: %v\n", phase, err)
		}
		return
	}
	var late []string
	for _, c := range list {
		if !collected[c.Name] {
			late = append(late, c.Name)
		}
	}
	if len(late) == 0 {
		return
	}
	fmt.Fprintf(GinkgoWriter, "%s: %s\n", phase, strings.Join(late, ", "))
	r.asyncStep(phase, func() error {
		return r.collector.CollectClusterExcept(ctx, r.clusterName, r.clusterDir(), collected)
	})
}

// lateMachinePoll is how often the engine is asked for new containers of
// the cluster while it is deleted. The engine is local and the list
// filtered by label: cheap.
const lateMachinePoll = 500 * time.Millisecond

// catchLateMachines collects, while the cluster is deleted, the logs of
// containers that start meanwhile; the returned stop ends it and waits.
// A collection under way when stop is called runs to its end (its own
// timeout bounds it).
func (r *run) catchLateMachines(ctx context.Context, collected map[string]bool) (stop func()) {
	stopped := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lateMachinePoll)
		defer t.Stop()
		for {
			r.collectLateMachines(ctx, collected, true, "cleanup: collect logs of machines started during the deletion")
			select {
			case <-ctx.Done():
				return
			case <-stopped:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(stopped)
		<-done
	}
}

// finalCleanup deletes the namespace, stops the event watch and checks
// that no container of the cluster is left. It runs even when the cluster
// deletion failed, so that leftovers are always reported.
func (r *run) finalCleanup(ctx SpecContext) {
	defer func() {
		if r.cancelWatches != nil {
			r.cancelWatches()
		}
	}()
	if r.in.SkipCleanup {
		return
	}
	if r.namespaceCreated {
		r.tryStep("cleanup: delete namespace", func() error {
			framework.DeleteNamespace(ctx, framework.DeleteNamespaceInput{
				Deleter: r.in.BootstrapClusterProxy.GetClient(),
				Name:    r.namespace,
			})
			return nil
		})
	}
	r.step("cleanup: leak check", func() {
		rep, err := leak.Check(ctx, r.in.Runtime, leak.Selector{Cluster: r.clusterName})
		Expect(err).ToNot(HaveOccurred())
		if !rep.Empty() {
			// Removed so that one leak does not cascade into the next
			// specs; the spec still fails, naming what was left.
			if rerr := leak.Remove(ctx, r.in.Runtime, rep); rerr != nil {
				fmt.Fprintf(GinkgoWriter, "removing leftovers: %v\n", rerr)
			}
		}
		Expect(rep.Err()).ToNot(HaveOccurred(), "the cluster's deletion left objects behind (now removed)")
	})
}

// writeSummary records the spec's failure, if any, and writes the summary
// file. It runs last, whatever happened before.
func (r *run) writeSummary() {
	if rep := CurrentSpecReport(); rep.Failed() {
		r.summary.Fail(rep.Failure.Message, rep.Failure.Location.String())
	}
	if err := r.summary.Write(); err != nil {
		fmt.Fprintf(GinkgoWriter, "writing the spec summary: %v\n", err)
		return
	}
	fmt.Fprintf(GinkgoWriter, "spec summary: %s\n", filepath.Join(r.summary.Dir(), summary.TextFile))
}

// conditions reads the conditions of the Cluster, its control planes,
// MachineDeployments and Machines, for the summary. Errors are skipped: this
// is for a person reading a failure, not an assertion.
func (r *run) conditions(ctx context.Context) []summary.Object {
	c := r.mgmt.GetClient()
	var out []summary.Object
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, cluster); err == nil {
		out = append(out, object("Cluster", cluster.ObjectMeta, cluster.Status.Conditions))
	}
	inCluster := []client.ListOption{client.InNamespace(r.namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName}}
	kcps := &controlplanev1.KubeadmControlPlaneList{}
	if err := c.List(ctx, kcps, inCluster...); err == nil {
		for _, k := range kcps.Items {
			out = append(out, object("KubeadmControlPlane", k.ObjectMeta, k.Status.Conditions))
		}
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := c.List(ctx, mds, inCluster...); err == nil {
		for _, m := range mds.Items {
			out = append(out, object("MachineDeployment", m.ObjectMeta, m.Status.Conditions))
		}
	}
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, inCluster...); err == nil {
		for _, m := range machines.Items {
			out = append(out, object("Machine", m.ObjectMeta, m.Status.Conditions))
		}
	}
	return out
}

func object(kind string, meta metav1.ObjectMeta, conds []metav1.Condition) summary.Object {
	o := summary.Object{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
	for _, c := range conds {
		o.Conditions = append(o.Conditions, summary.Condition{
			Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime.Time,
		})
	}
	return o
}

// templateIfExists returns name when an infrastructure template of the
// same group and kind as ref exists under that name in the spec's
// namespace, and nil otherwise.
func (r *run) templateIfExists(ctx context.Context, ref clusterv1.ContractVersionedObjectReference, name string) *string {
	c := r.mgmt.GetClient()
	mapping, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	Expect(err).ToNot(HaveOccurred(), "map %s.%s to a version", ref.Kind, ref.APIGroup)
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	err = c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).ToNot(HaveOccurred(), "get %s %s/%s", ref.Kind, r.namespace, name)
	return &name
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
