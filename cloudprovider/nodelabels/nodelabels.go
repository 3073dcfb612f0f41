// Package nodelabels is a controller that gives Nodes the cloud provider's
// labels (instance type, zone, region) when the standard cloud-node
// controller did not, because someone else initialised the Node first.
//
// Why it exists: CAPD v1.14.2 still plays the cloud provider itself
// (dockermachine_backend.go reconcileNode sets spec.providerID and removes
// the node.cloudprovider.kubernetes.io/uninitialized taint), whatever the
// kubelet's --cloud-provider. The standard cloud-node controller
// (k8s.io/cloud-provider/controllers/node) sets labels only while that
// taint is there; on a Node it finds initialised it only reconciles the
// beta/GA label pairs. So whenever CAPD wins the race for a new Node, the
// Node would stay without the labels the cloud-controller-manager owns.
// This controller closes that gap with the provider's own InstanceMetadata;
// it never touches a Node that still has the taint (the standard controller
// owns those) or labels a Node already has. No library offers this: it is
// specific to a machine controller that initialises Nodes beside a CCM.
package nodelabels

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
)

// Name is the controller's name (--controllers).
const Name = "docker-node-labels"

// Controller labels initialised Nodes that lack the provider's labels.
type Controller struct {
	client    kubernetes.Interface
	instances cloudprovider.InstancesV2
	nodes     corelisters.NodeLister
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller over the node informer; instances is the cloud
// provider's InstancesV2.
func New(nodes coreinformers.NodeInformer, client kubernetes.Interface, instances cloudprovider.InstancesV2) (*Controller, error) {
	if instances == nil {
		return nil, fmt.Errorf("%s: the cloud provider has no InstancesV2", Name)
	}
	c := &Controller{
		client:    client,
		instances: instances,
		nodes:     nodes.Lister(),
		synced:    nodes.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name}),
	}
	enqueue := func(obj any) {
		if n, ok := obj.(*v1.Node); ok && NeedsLabels(n) {
			c.queue.Add(n.Name)
		}
	}
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}

// NeedsLabels reports whether n is initialised (no uninitialized taint)
// but lacks a label the provider sets.
func NeedsLabels(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return false
		}
	}
	for _, l := range []string{v1.LabelInstanceTypeStable, v1.LabelTopologyZone, v1.LabelTopologyRegion} {
		if n.Labels[l] == "" {
			return true
		}
	}
	return false
}

// Run processes Nodes until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		return
	}
	go wait.UntilWithContext(ctx, c.worker, time.Second)
	<-ctx.Done()
}

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.Sync(ctx, name); err != nil {
		klog.ErrorS(err, "Labelling node failed; retrying", "controller", Name, "node", name)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// Sync labels the Node name if it needs labels: the instance type, zone and
// region from InstanceMetadata, each only where the Node has none (a
// merge patch, so nothing else on the Node changes).
func (c *Controller) Sync(ctx context.Context, name string) error {
	n, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !NeedsLabels(n) {
		return nil
	}
	md, err := c.instances.InstanceMetadata(ctx, n)
	if err != nil {
		return fmt.Errorf("instance metadata of node %s: %w", name, err)
	}
	labels := map[string]string{}
	set := func(key, value string) {
		if value != "" && n.Labels[key] == "" {
			labels[key] = value
		}
	}
	set(v1.LabelInstanceTypeStable, md.InstanceType)
	set(v1.LabelInstanceType, md.InstanceType)
	set(v1.LabelTopologyZone, md.Zone)
	set(v1.LabelFailureDomainBetaZone, md.Zone)
	set(v1.LabelTopologyRegion, md.Region)
	set(v1.LabelFailureDomainBetaRegion, md.Region)
	if len(labels) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label node %s: %w", name, err)
	}
	klog.InfoS("Labelled a node initialised by another controller", "controller", Name, "node", name, "labels", labels)
	return nil
}
