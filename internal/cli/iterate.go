// iterate is `capd-e2e iterate` (`make iterate`): the inner loop on a
// kept environment.
//
//	capd-e2e iterate [--name explore] [--capi-source DIR] [--label-filter md-rollout]
//
// With `capd-e2e up` running from the same Cluster API tree
// (CAPI_SOURCE_DIR), it rebuilds the Cluster API controller images from the
// tree (only those whose inputs changed: capd-e2e images caches by
// content), loads the changed ones into the kept management cluster's
// nodes (framework/bootstrap.LoadImages), restarts the controllers that
// run them and waits for their rollout and their leader leases, then runs
// the chosen spec against that management cluster (a supervised run with
// USE_EXISTING_CLUSTER). The default, md-rollout, rolls out the kept
// workload cluster's MachineDeployments (CAPD_E2E_WORKLOAD_CLUSTER): every
// controller at work on a cluster that is up already, which it leaves
// running; any other spec creates and deletes a cluster of its own.
// Artifacts: _explore/NAME/iterate/<time>.
//
// Images are inspected and loaded through the harness's runtime, the
// cluster is read and changed with client-go: no docker or kubectl CLI.

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/kept"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// controllerSteps are the image steps of Cluster API's controllers
// (capd-e2e images --list).
var controllerSteps = []string{"cluster-api/core", "cluster-api/kubeadm-bootstrap", "cluster-api/kubeadm-control-plane", "cluster-api/docker"}

// Waits of the rollout: a restarted controller's pods, its old pod's end,
// and a new pod taking its leader lease (Cluster API's managers retry
// every 2 s).
const (
	rolloutTimeout   = 5 * time.Minute
	oldPodTimeout    = 2 * time.Minute
	leaseTimeout     = time.Minute
	rolloutPollEvery = time.Second
)

type iterateOptions struct {
	envOptions
	capiSource string
	run        runOptions
}

func newIterateCommand(s streams) *cobra.Command {
	o := &iterateOptions{}
	cmd := &cobra.Command{
		Use:   "iterate",
		Short: "The inner loop: rebuild the changed controllers from CAPI_SOURCE_DIR, load and roll them out in capd-e2e up's cluster, run a spec against it (make iterate)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageError(err)
			}
			return exitCode(iterate(cmd.Context(), *o, s))
		},
	}
	o.envOptions.flags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.capiSource, "capi-source", os.Getenv("CAPI_SOURCE_DIR"), "the Cluster API tree the environment runs, and the controllers are rebuilt from ($CAPI_SOURCE_DIR)")
	f.StringVar(&o.run.labelFilter, "label-filter", env("GINKGO_LABEL_FILTER", "md-rollout"), "the specs to run against the environment ($GINKGO_LABEL_FILTER)")
	f.StringVar(&o.run.focus, "focus", os.Getenv("GINKGO_FOCUS"), "Ginkgo's focus ($GINKGO_FOCUS)")
	f.StringSliceVar(&o.run.skip, "skip", strings.Fields(os.Getenv("GINKGO_SKIP")), "Ginkgo's skips ($GINKGO_SKIP, space separated)")
	suiteFlags(cmd, &o.run)
	return cmd
}

func (o *iterateOptions) check() error {
	errs := []error{o.envOptions.check()}
	if o.capiSource == "" {
		errs = append(errs, errors.New("--capi-source (CAPI_SOURCE_DIR) is unset: the inner loop rebuilds Cluster API's controllers from your tree"))
	} else if tree, err := filepath.EvalSymlinks(o.capiSource); err != nil {
		errs = append(errs, fmt.Errorf("--capi-source %s: %w", o.capiSource, err))
	} else {
		o.capiSource = tree
	}
	o.run.artifacts = filepath.Join(o.dir, "iterate", time.Now().UTC().Format("20060102T150405"))
	o.run.useExisting = true
	errs = append(errs, o.run.check())
	return errors.Join(errs...)
}

// controller is a Deployment that runs Cluster API controller images.
type controller struct {
	namespace, name string
	images          []string
}

// controllers returns the Deployments whose containers run an image of
// Cluster API's (a reference with "/cluster-api/" in it), sorted.
func controllers(ds []appsv1.Deployment) []controller {
	var out []controller
	for _, d := range ds {
		c := controller{namespace: d.Namespace, name: d.Name}
		for _, ct := range d.Spec.Template.Spec.Containers {
			if strings.Contains(ct.Image, "/cluster-api/") && !slices.Contains(c.images, ct.Image) {
				c.images = append(c.images, ct.Image)
			}
		}
		if len(c.images) > 0 {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].namespace+"/"+out[i].name < out[j].namespace+"/"+out[j].name })
	return out
}

func iterate(ctx context.Context, o iterateOptions, s streams) int {
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(s.out, "[capd-e2e iterate %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(s.err, "capd-e2e iterate: "+format+"\n", args...)
		return code
	}
	unlock, err := o.lock()
	if err != nil {
		return fail(1, "%v", err)
	}
	defer unlock()
	e, err := kept.Read(o.dir)
	if errors.Is(err, kept.ErrNotKept) {
		return fail(2, "no environment %q is up: `CAPI_SOURCE_DIR=... make up NAME=%s` first", o.name, o.name)
	}
	if err != nil {
		return fail(2, "%v", err)
	}
	if e.CAPISource != o.capiSource {
		from := e.CAPISource
		if from == "" {
			from = "its release (no CAPI_SOURCE_DIR)"
		}
		return fail(2, "%q runs Cluster API from %s, not %s: bring it up with CAPI_SOURCE_DIR=%s", o.name, from, o.capiSource, o.capiSource)
	}
	kubeconfig := filepath.Join(o.dir, kept.ManagementKubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fail(2, "%s: %v", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(2, "%v", err)
	}
	rt, err := moby.New(moby.Config{})
	if err != nil {
		return fail(2, "%v", err)
	}
	defer rt.Close()

	ds, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fail(1, "the management cluster of %q (%s): %v", o.name, kubeconfig, err)
	}
	ctrls := controllers(ds.Items)
	if len(ctrls) == 0 {
		return fail(1, "no Cluster API controller runs in %q", o.name)
	}
	before := map[string]string{}
	for _, c := range ctrls {
		for _, ref := range c.images {
			before[ref] = imageID(ctx, rt, ref)
		}
	}

	logf("rebuilding Cluster API's controllers from %s (only what changed)", o.capiSource)
	logPath := filepath.Join(o.dir, "iterate-images.log")
	if err := rebuild(ctx, o.run.config, logPath); err != nil {
		return fail(1, "the image build failed: %v (log: %s)", err, logPath)
	}
	var changed []string
	for ref, id := range before {
		if imageID(ctx, rt, ref) != id {
			changed = append(changed, ref)
		}
	}
	sort.Strings(changed)
	logf("rebuilt and changed: %s", orNone(changed))

	if len(changed) > 0 {
		nodes, err := bootstrap.Nodes(ctx, rt, e.ManagementCluster)
		if err != nil {
			return fail(1, "%v", err)
		}
		if err := bootstrap.LoadImages(ctx, rt, nodes, changed); err != nil {
			return fail(1, "%v", err)
		}
		logf("loaded into %s", strings.Join(nodes, ", "))
		if err := rollOut(ctx, cs, ctrls, changed, logf); err != nil {
			return fail(1, "%v", err)
		}
		logf("controllers rolled out and leading after %ds", int(time.Since(start).Seconds()))
	}

	vars := map[string]string{"KUBECONFIG": kubeconfig, envCloudProvider: e.CloudProvider}
	if len(e.WorkloadClusters) == 1 {
		vars[envWorkload] = e.WorkloadClusters[0]
	} else if o.run.labelFilter == "md-rollout" {
		return fail(2, "%q keeps %d workload clusters (%s): md-rollout needs exactly one", o.name, len(e.WorkloadClusters), orNone(e.WorkloadClusters))
	}
	if err := setenv(vars); err != nil {
		return fail(2, "%v", err)
	}
	logf("running %q against %q (artifacts: %s)", o.run.labelFilter, o.name, o.run.artifacts)
	rc := supervise(ctx, o.run, s)
	verdict := "passed"
	if rc != 0 {
		verdict = "failed"
	}
	logf("make iterate: %s in %ds", verdict, int(time.Since(start).Seconds()))
	return rc
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, " ")
}

// imageID is ref's image id in the engine, "" when it has none.
func imageID(ctx context.Context, rt runtime.Runtime, ref string) string {
	img, err := rt.InspectImage(ctx, ref)
	if err != nil {
		return ""
	}
	return img.ID
}

// rebuild runs capd-e2e images for the controllers' steps, its output
// into logPath.
func rebuild(ctx context.Context, config, logPath string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	return runImages(ctx, f, []string{"--config", config, "--only", strings.Join(controllerSteps, ",")})
}

// rollOut restarts the controllers that run a changed image, all at once,
// waits for their rollouts, then for a new pod to hold each leader lease
// an old pod held.
func rollOut(ctx context.Context, cs kubernetes.Interface, ctrls []controller, changed []string, logf func(string, ...any)) error {
	oldPods := map[string]map[string]bool{} // namespace → pod names
	var restarted []controller
	now := time.Now().UTC().Format(time.RFC3339)
	for _, c := range ctrls {
		if !slices.ContainsFunc(c.images, func(ref string) bool { return slices.Contains(changed, ref) }) {
			continue
		}
		pods, err := cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if oldPods[c.namespace] == nil {
			oldPods[c.namespace] = map[string]bool{}
		}
		for _, p := range pods.Items {
			oldPods[c.namespace][p.Name] = true
		}
		// What `kubectl rollout restart` does.
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, now)
		if _, err := cs.AppsV1().Deployments(c.namespace).Patch(ctx, c.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("restart %s/%s: %w", c.namespace, c.name, err)
		}
		restarted = append(restarted, c)
		logf("restarted %s/%s", c.namespace, c.name)
	}
	for _, c := range restarted {
		if err := waitRollout(ctx, cs, c.namespace, c.name, rolloutTimeout); err != nil {
			return err
		}
	}
	namespaces := make([]string, 0, len(oldPods))
	for ns := range oldPods {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		if err := takeOverLeases(ctx, cs, ns, oldPods[ns], logf); err != nil {
			return err
		}
	}
	return nil
}

// waitRollout waits until every replica of the Deployment runs its
// latest template and is available (`kubectl rollout status`).
func waitRollout(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, rolloutPollEvery, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		done, why := rolledOut(d)
		last = why
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s/%s not rolled out after %s: %s", ns, name, timeout, last)
	}
	return nil
}

// rolledOut says whether d's rollout is complete, and if not, why.
func rolledOut(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("generation %d not observed yet (%d)", d.Generation, st.ObservedGeneration)
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		return false, fmt.Sprintf("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)
	}
	return true, ""
}

// holderPod is the pod in a leader lease's holder identity (controller
// runtime's "<pod>_<uuid>").
func holderPod(holder string) string {
	pod, _, _ := strings.Cut(holder, "_")
	return pod
}

// takeOverLeases hands the leader leases of namespace ns that old pods
// hold to the new ones. A restarted controller leads only once its old
// pod's lease expires (15 s for Cluster API's managers, which do not
// release it when they stop). Once that old pod is gone its lease is
// stale: it is deleted, so that a new pod leads at its next try; then a
// pod that is not an old one must hold it.
func takeOverLeases(ctx context.Context, cs kubernetes.Interface, ns string, old map[string]bool, logf func(string, ...any)) error {
	leases, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil || !old[holderPod(*l.Spec.HolderIdentity)] {
			continue
		}
		holder := *l.Spec.HolderIdentity
		pod := holderPod(holder)
		err := wait.PollUntilContextTimeout(ctx, rolloutPollEvery, oldPodTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("the old pod %s/%s is still there %s after the restart", ns, pod, oldPodTimeout)
		}
		// Only if the old pod still holds it: a new one may have taken it.
		cur, err := cs.CoordinationV1().Leases(ns).Get(ctx, l.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity == holder {
			if err := cs.CoordinationV1().Leases(ns).Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		var now string
		err = wait.PollUntilContextTimeout(ctx, rolloutPollEvery, leaseTimeout, true, func(ctx context.Context) (bool, error) {
			cur, err := cs.CoordinationV1().Leases(ns).Get(ctx, l.Name, metav1.GetOptions{})
			if err != nil || cur.Spec.HolderIdentity == nil {
				return false, nil
			}
			now = holderPod(*cur.Spec.HolderIdentity)
			return now != "" && !old[now], nil
		})
		if err != nil {
			return fmt.Errorf("no new pod of %s took the lease %s within %s", ns, l.Name, leaseTimeout)
		}
		logf("lease %s/%s: released by the old pod, held by %s", ns, l.Name, now)
	}
	return nil
}
