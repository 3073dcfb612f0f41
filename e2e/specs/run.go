package specs

import (
	"context"
	"errors"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/util"

	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/summary"
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
	collector LogCollector
	// cleanupTimeout bounds each of the spec's cleanup nodes.
	cleanupTimeout time.Duration

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
	// created is set once createCluster saw the cluster healthy, and
	// topology whether its Cluster is of a ClusterClass: the ownership
	// check before the deletion needs both.
	created, topology bool
	// adopted is set when the spec works on a cluster it did not create
	// (adopt): its cleanup collects and records, but deletes nothing and
	// checks no leaks; the cluster and its namespace stay as they are.
	adopted bool

	// Set by a spec for its cleanup: beforeDelete runs before the
	// cleanup deletes the Cluster, whileDeleting right after it asked
	// (the deletion is under way: a spec may check what holds it), and
	// finally before the namespace is deleted, whether the Cluster
	// existed or not.
	beforeDelete []func(context.Context)
	// ownerless are objects of the spec's namespace that must have no
	// owner, as "<Kind>/<name>" (see ownerAssertions).
	ownerless map[string]bool
	// owners are the exact owners of objects of the spec's namespace
	// that differ from upstream's assertions, by "<Kind>/<name>"
	// (checkOwnership).
	owners        map[string][]metav1.OwnerReference
	whileDeleting func(context.Context)
	finally       []func(context.Context)
	// last runs at the very end of the final cleanup, after the leak
	// check, even when that failed, and also with SkipCleanup: for what
	// outlives the Cluster and its namespace (a management cluster of the
	// spec's own, which keeps itself with SkipCleanup).
	last []func(context.Context)
}

// begin validates the common input, names the spec's namespace and cluster,
// bounds the spec by its timeout (timeout, or if zero the sum of its waits:
// defaultTimeout) and registers the cleanup: write the summary (last), then
// the leak check and namespace deletion, then (first) dump, collect,
// snapshot and delete the cluster. Cleanup a spec registers after begin
// runs before all that. The spec goes on with the returned context, which
// ends when its timeout runs out, naming it (context.Cause).
func begin(ctx context.Context, spec string, in CommonInput, timeout time.Duration) (*run, context.Context) {
	r, ctx := start(ctx, spec, in, timeout)
	r.createNamespace(ctx)
	return r, ctx
}

// start is begin without the namespace, for a spec whose management
// cluster is not the bootstrap cluster: it sets r.in.BootstrapClusterProxy
// and r.mgmt to its own, then calls createNamespace.
func start(ctx context.Context, spec string, in CommonInput, timeout time.Duration) (*run, context.Context) {
	return newRun(ctx, spec, in, timeout, fmt.Sprintf("%s-%s", spec, util.RandomString(6)), fmt.Sprintf("%s-%s", spec, util.RandomString(6)))
}

// adopt is begin for a Cluster that exists already, in its own namespace of
// the bootstrap cluster: the spec works on it and leaves it, and its
// namespace, in place (run.adopted). The namespace's events are streamed
// to the artifacts while the spec runs, as begin's are.
func adopt(ctx context.Context, spec string, in CommonInput, timeout time.Duration, cluster types.NamespacedName) (*run, context.Context) {
	Expect(cluster.Namespace).ToNot(BeEmpty(), "%s: the existing cluster's namespace is required", spec)
	Expect(cluster.Name).ToNot(BeEmpty(), "%s: the existing cluster's name is required", spec)
	r, ctx := newRun(ctx, spec, in, timeout, cluster.Namespace, cluster.Name)
	r.adopted = true
	r.summary.Set("existing cluster", cluster.String()+" (kept: the spec neither created nor deletes it)")
	r.step("find the existing cluster", func() {
		err := in.BootstrapClusterProxy.GetClient().Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Name}, &clusterv1.Cluster{})
		Expect(err).ToNot(HaveOccurred(), "%s: the existing cluster %s in management cluster %q", spec, cluster, in.BootstrapClusterProxy.GetName())
		watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r.cancelWatches = cancel
		go func() {
			defer GinkgoRecover()
			framework.WatchNamespaceEvents(watchCtx, framework.WatchNamespaceEventsInput{
				ClientSet: in.BootstrapClusterProxy.GetClientSet(),
				Name:      cluster.Namespace,
				LogFolder: r.bootstrapDir(),
			})
		}()
	})
	return r, ctx
}

// newRun is start with the spec's namespace and cluster names given.
func newRun(ctx context.Context, spec string, in CommonInput, timeout time.Duration, namespace, clusterName string) (*run, context.Context) {
	// The summary needs only the artifacts folder: with it checked first,
	// even a spec given a bad input leaves a summary saying so.
	Expect(in.ArtifactFolder).ToNot(BeEmpty(), "%s: ArtifactFolder is required", spec)
	Expect(os.MkdirAll(in.ArtifactFolder, 0o755)).To(Succeed(), "%s: cannot create ArtifactFolder", spec)
	r := &run{
		spec:        spec,
		in:          in,
		collector:   in.LogCollector,
		namespace:   namespace,
		clusterName: clusterName,
		mgmt:        in.BootstrapClusterProxy,
	}
	r.summary = summary.New(spec, r.clusterDir())
	r.summary.Set("namespace", r.namespace)
	r.summary.Set("cluster", r.clusterName)
	r.summary.Set("artifacts", r.clusterDir())
	DeferCleanup(r.writeSummary)
	// The suite's report (framework/report) finds the summary by it.
	if rel, err := filepath.Rel(in.ArtifactFolder, filepath.Join(r.clusterDir(), summary.JSONFile)); err == nil {
		AddReportEntry(summary.ReportEntry, rel, ReportEntryVisibilityNever)
	}

	r.step("check input", func() {
		Expect(in.E2EConfig).ToNot(BeNil(), "%s: E2EConfig is required", spec)
		Expect(in.ClusterctlConfigPath).To(BeAnExistingFile(), "%s: ClusterctlConfigPath must be an existing file", spec)
		Expect(in.BootstrapClusterProxy).ToNot(BeNil(), "%s: BootstrapClusterProxy is required", spec)
		Expect(in.Runtime).ToNot(BeNil(), "%s: Runtime is required", spec)
	})
	r.summary.Set("management cluster", in.BootstrapClusterProxy.GetName())
	if r.collector == nil {
		r.collector = &logs.Collector{Runtime: in.Runtime}
	}
	r.step("set the spec's timeouts", func() {
		set := "set by the input"
		if timeout == 0 {
			var err error
			timeout, err = defaultTimeout(in.E2EConfig, spec)
			Expect(err).ToNot(HaveOccurred(), "%s: the default timeout is the sum of the spec's waits", spec)
			set = "the sum of the spec's waits at the config's intervals"
		}
		r.summary.Set("timeout", fmt.Sprintf("%s (%s)", timeout, set))
		r.cleanupTimeout = in.CleanupTimeout
		if r.cleanupTimeout == 0 {
			var err error
			r.cleanupTimeout, err = defaultCleanupTimeout(in.E2EConfig, spec)
			Expect(err).ToNot(HaveOccurred(), "%s: the default cleanup timeout is the sum of the cleanup's waits", spec)
		}
	})
	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("spec %s ran out of its timeout of %s (its input's Timeout; if unset, the sum of its waits)", spec, timeout))
	DeferCleanup(cancel)
	DeferCleanup(r.finalCleanup, NodeTimeout(r.cleanupTimeout))
	DeferCleanup(r.clusterCleanup, NodeTimeout(r.cleanupTimeout))
	return r, ctx
}

// createNamespace creates the spec's namespace in r.in.BootstrapClusterProxy
// and streams its events until the final cleanup.
func (r *run) createNamespace(ctx context.Context) {
	in := r.in
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
}

// clusterDir is where the workload cluster's artifacts go.
func (r *run) clusterDir() string {
	return filepath.Join(r.in.ArtifactFolder, "clusters", r.clusterName)
}

// bootstrapDir is where the management cluster's artifacts go.
func (r *run) bootstrapDir() string {
	return filepath.Join(r.in.ArtifactFolder, "clusters", r.in.BootstrapClusterProxy.GetName())
}

var errAborted = errors.New(summary.AbortedMessage)

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

// durations returns the spec's timeout and poll for the interval key,
// read as the config check reads it (upstream.Intervals); it fails the
// spec when the config has neither "<spec>/<key>" nor "default/<key>", or
// a value it cannot use.
func (r *run) durations(key string) (timeout, poll time.Duration) {
	timeout, poll, err := upstream.Intervals(r.in.E2EConfig, r.spec, key)
	Expect(err).ToNot(HaveOccurred(), "%s: the e2e config's intervals", r.spec)
	return timeout, poll
}

// intervals is durations as upstream's helpers take it: [timeout, poll].
func (r *run) intervals(key string) []any {
	timeout, poll := r.durations(key)
	return []any{timeout, poll}
}

// variable returns a config variable that must be set.
func (r *run) variable(name string) string {
	Expect(r.in.E2EConfig.HasVariable(name)).To(BeTrue(), "%s: the e2e config must set variable %s", r.spec, name)
	return r.in.E2EConfig.MustGetVariable(name)
}
