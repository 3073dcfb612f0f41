package specs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

// lifecycleHooks drives Cluster API's test runtime extension
// (sigs.k8s.io/cluster-api/test/extension, v1.14.2) for one spec. The
// extension answers each lifecycle hook of a Cluster from a ConfigMap in
// the Cluster's namespace, "<cluster>-<ExtensionConfig>-test-extension-hookresponses":
// "<hook>-preloadedResponse" holds the answer (with the setting
// defaultAllHandlersToBlocking, a blocking hook's default answer asks
// Cluster API to retry in 5 s), and the extension records the answer of
// each call as "<hook>-actualResponseStatus". A hook's key carries its
// attributes: "BeforeClusterUpgrade-v1.36.3-v1.37.2".
type lifecycleHooks struct {
	r *run
	c client.Client
	// extensionConfig is the ExtensionConfig's name (cluster-scoped, so
	// unique to the spec: it selects the spec's namespace only).
	extensionConfig string
	created         bool
}

// Answers the test extension records (its own spelling).
const (
	hookBlocking = "Status: Success, RetryAfterSeconds: 5"
	hookPassed   = "Status: Success, RetryAfterSeconds: 0"
	hookSuccess  = "Success" // a non-blocking hook's answer
)

// hookKey is the extension's key of a hook call: the hook and its
// attributes joined by "-", "+" replaced (not allowed in a key).
func hookKey(hook string, attributes ...string) string {
	return strings.ReplaceAll(strings.Join(append([]string{hook}, attributes...), "-"), "+", "_")
}

func (h *lifecycleHooks) configMap() types.NamespacedName {
	return types.NamespacedName{Namespace: h.r.namespace, Name: fmt.Sprintf("%s-%s-test-extension-hookresponses", h.r.clusterName, h.extensionConfig)}
}

// recorded returns the answers the extension recorded, by hook key.
func (h *lifecycleHooks) recorded(ctx context.Context) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	if err := h.c.Get(ctx, h.configMap(), cm); err != nil {
		return nil, fmt.Errorf("the extension's ConfigMap %s: %w", h.configMap(), err)
	}
	out := map[string]string{}
	for k, v := range cm.Data {
		if key, ok := strings.CutSuffix(k, "-actualResponseStatus"); ok {
			out[key] = v
		}
	}
	return out, nil
}

// answered returns the last answer recorded for key, "" if none.
func (h *lifecycleHooks) answered(ctx context.Context, key string) (string, error) {
	rec, err := h.recorded(ctx)
	if err != nil {
		return "", err
	}
	return rec[key], nil
}

// notCalled is a condition of a hold: the hook that follows key must not
// have been called while key blocks.
func (h *lifecycleHooks) notCalled(ctx context.Context, key string) error {
	a, err := h.answered(ctx, key)
	if err != nil {
		return err
	}
	if a != "" {
		return fmt.Errorf("%s was already called (answered %q)", key, a)
	}
	return nil
}

// createExtensionConfig registers the extension's Service for the spec's
// namespace, every handler blocking by default, as upstream's runtime SDK
// spec does; the CA comes from the Service's certificate Secret
// ("<service>-cert", the test extension's), injected by Cluster API.
func (h *lifecycleHooks) createExtensionConfig(ctx context.Context, serviceNamespace, serviceName string) {
	ec := &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name:        h.extensionConfig,
			Annotations: map[string]string{runtimev1.InjectCAFromSecretAnnotation: serviceNamespace + "/" + serviceName + "-cert"},
		},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig: runtimev1.ClientConfig{Service: runtimev1.ServiceReference{Namespace: serviceNamespace, Name: serviceName}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{h.r.namespace},
			}}},
			Settings: map[string]string{
				"extensionConfigName":          h.extensionConfig,
				"defaultAllHandlersToBlocking": "true",
				"disableInPlaceUpdates":        "true",
			},
		},
	}
	Expect(h.c.Create(ctx, ec)).To(Succeed(), "create ExtensionConfig %s", h.extensionConfig)
	h.created = true
}

// waitDiscovered waits for Cluster API to discover the extension's
// handlers, and returns their names.
func (h *lifecycleHooks) waitDiscovered(ctx context.Context) []string {
	timeout, poll := h.r.durations("wait-extension")
	var handlers []string
	Eventually(func() error {
		ec := &runtimev1.ExtensionConfig{}
		if err := h.c.Get(ctx, client.ObjectKey{Name: h.extensionConfig}, ec); err != nil {
			return err
		}
		for _, c := range ec.Status.Conditions {
			if c.Type == runtimev1.ExtensionConfigDiscoveredCondition && c.Status != metav1.ConditionTrue {
				return fmt.Errorf("%s %s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		handlers = handlers[:0]
		for _, hd := range ec.Status.Handlers {
			handlers = append(handlers, hd.RequestHook.Hook)
		}
		if len(handlers) == 0 {
			return errors.New("no handlers discovered yet")
		}
		return nil
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(),
		"ExtensionConfig %s: the test extension's handlers discovered", h.extensionConfig)
	return handlers
}

// deleteExtensionConfig removes the ExtensionConfig, so that no hook of
// the extension blocks the cluster's deletion any more.
func (h *lifecycleHooks) deleteExtensionConfig(ctx context.Context) error {
	if !h.created {
		return nil
	}
	err := h.c.Delete(ctx, &runtimev1.ExtensionConfig{ObjectMeta: metav1.ObjectMeta{Name: h.extensionConfig}})
	return client.IgnoreNotFound(err)
}

// pass checks that a blocking hook was called and honoured, then lets it
// pass, as upstream's runtimeHookTestHandler does: the extension records a
// blocking answer for key and, unless the hook is BeforeClusterDelete, the
// Cluster's TopologyReconciled condition names the hook (wait-hook-called);
// held stays true while it blocks (check-hook-blocks: several of Cluster
// API's retries, 5 s apart); then the answer becomes a pass, and the
// extension must record it and held must end: the Cluster went on
// (wait-hook-unblocked). held returns nil while the hook holds the Cluster,
// or what shows it does not. The summary records each stage.
func (h *lifecycleHooks) pass(ctx context.Context, hook string, attributes []string, held func(context.Context) error) {
	key := hookKey(hook, attributes...)
	shown := func() error {
		if hook == "BeforeClusterDelete" {
			return nil
		}
		cluster := &clusterv1.Cluster{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.r.namespace, Name: h.r.clusterName}, cluster); err != nil {
			return err
		}
		for _, c := range cluster.Status.Conditions {
			if c.Type == clusterv1.ClusterTopologyReconciledCondition && strings.Contains(c.Message, hook) {
				return nil
			}
		}
		return fmt.Errorf("the Cluster's %s condition does not name %s%s", clusterv1.ClusterTopologyReconciledCondition, hook, topologyProblem(cluster))
	}
	var calledAt time.Time
	h.r.step(fmt.Sprintf("hook %s: called and blocking", key), func() {
		timeout, poll := h.r.durations("wait-hook-called")
		Eventually(func() error {
			a, err := h.answered(ctx, key)
			if err != nil {
				return err
			}
			if a != hookBlocking {
				return fmt.Errorf("%s answered %q, want %q", key, a, hookBlocking)
			}
			return errors.Join(shown(), held(ctx))
		}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "hook %s called and blocking", key)
		calledAt = time.Now()
	})
	var window time.Duration
	h.r.step(fmt.Sprintf("hook %s: the Cluster waits while it blocks", key), func() {
		var poll time.Duration
		window, poll = h.r.durations("check-hook-blocks")
		Consistently(func() error {
			return errors.Join(shown(), held(ctx))
		}).WithContext(ctx).WithTimeout(window).WithPolling(poll).Should(Succeed(), "hook %s blocking: the Cluster must wait", key)
	})
	var releasedAt time.Time
	h.r.step(fmt.Sprintf("hook %s: let it pass; the Cluster goes on", key), func() {
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, key+"-preloadedResponse", `{"Status": "Success"}`)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.configMap().Namespace, Name: h.configMap().Name}}
		Expect(h.c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed(), "answer %s with a pass", key)
		releasedAt = time.Now()
		timeout, poll := h.r.durations("wait-hook-unblocked")
		Eventually(func() error {
			a, err := h.answered(ctx, key)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if a != hookPassed && err == nil {
				return fmt.Errorf("%s answered %q, want %q", key, a, hookPassed)
			}
			if held(ctx) == nil {
				return fmt.Errorf("%s passed, but the Cluster has not gone on", key)
			}
			return nil
		}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "hook %s passed: the Cluster goes on", key)
	})
	h.r.summary.Set("hook "+key, fmt.Sprintf("blocked the Cluster for %s (checked for %s), went on %s after it passed",
		releasedAt.Sub(calledAt).Round(time.Second), window, time.Since(releasedAt).Round(time.Second)))
}

// expectAnswers checks the last answer the extension recorded for every
// hook of want, as upstream's checkLifecycleHookResponses does.
func (h *lifecycleHooks) expectAnswers(ctx context.Context, want map[string]string) {
	rec, err := h.recorded(ctx)
	Expect(err).ToNot(HaveOccurred())
	var problems []string
	for key, answer := range want {
		if got, ok := rec[key]; !ok {
			problems = append(problems, key+" was never called")
		} else if got != answer {
			problems = append(problems, fmt.Sprintf("%s answered %q last, want %q", key, got, answer))
		}
	}
	Expect(problems).To(BeEmpty(), "the test extension's record of the lifecycle hooks (ConfigMap %s): %v", h.configMap(), rec)
}

// versions returns the version the KubeadmControlPlane asks for and, per
// MachineDeployment and MachinePool of the cluster, the version its
// template asks for.
func (h *lifecycleHooks) versions(ctx context.Context) (controlPlane string, workers map[string]string, err error) {
	kcps := &controlplanev1.KubeadmControlPlaneList{}
	if err := h.c.List(ctx, kcps, client.InNamespace(h.r.namespace), h.r.clusterLabels()); err != nil {
		return "", nil, err
	}
	if len(kcps.Items) != 1 {
		return "", nil, fmt.Errorf("%d KubeadmControlPlanes, want 1", len(kcps.Items))
	}
	workers = map[string]string{}
	mds := &clusterv1.MachineDeploymentList{}
	if err := h.c.List(ctx, mds, client.InNamespace(h.r.namespace), h.r.clusterLabels()); err != nil {
		return "", nil, err
	}
	for _, md := range mds.Items {
		workers["MachineDeployment "+md.Name] = md.Spec.Template.Spec.Version
	}
	mps := &clusterv1.MachinePoolList{}
	if err := h.c.List(ctx, mps, client.InNamespace(h.r.namespace), h.r.clusterLabels()); err != nil {
		return "", nil, err
	}
	for _, mp := range mps.Items {
		workers["MachinePool "+mp.Name] = mp.Spec.Template.Spec.Version
	}
	return kcps.Items[0].Spec.Version, workers, nil
}

// at returns nil when the control plane asks for controlPlane and every
// worker for workers.
func (h *lifecycleHooks) at(ctx context.Context, controlPlane, workers string) error {
	cp, ws, err := h.versions(ctx)
	if err != nil {
		return err
	}
	var problems []string
	if cp != controlPlane {
		problems = append(problems, fmt.Sprintf("the control plane asks for %s, want %s", cp, controlPlane))
	}
	for name, v := range ws {
		if v != workers {
			problems = append(problems, fmt.Sprintf("%s asks for %s, want %s", name, v, workers))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// machinesAt returns nil when every control-plane Machine (controlPlane)
// or every worker Machine (!controlPlane) of the cluster runs version with
// a healthy Node.
func (h *lifecycleHooks) machinesAt(ctx context.Context, controlPlane bool, version string) error {
	machines := &clusterv1.MachineList{}
	if err := h.c.List(ctx, machines, client.InNamespace(h.r.namespace), h.r.clusterLabels()); err != nil {
		return err
	}
	var problems []string
	n := 0
	for _, m := range machines.Items {
		_, cp := m.Labels[clusterv1.MachineControlPlaneLabel]
		if cp != controlPlane {
			continue
		}
		n++
		healthy := false
		for _, c := range m.Status.Conditions {
			if c.Type == clusterv1.MachineNodeHealthyCondition && c.Status == metav1.ConditionTrue {
				healthy = true
			}
		}
		if m.Spec.Version != version || !healthy {
			problems = append(problems, fmt.Sprintf("Machine %s: version %s, Node healthy %t", m.Name, m.Spec.Version, healthy))
		}
	}
	if n == 0 {
		problems = append(problems, "no Machines")
	}
	if len(problems) > 0 {
		return fmt.Errorf("want %s: %s", version, strings.Join(problems, "; "))
	}
	return nil
}
