// Package ccm installs the docker cloud-controller-manager
// (cmd/capd-cloud-controller-manager) for a workload cluster, the way a
// provider installs its cloud-controller-manager: one Deployment per
// workload cluster, in the management cluster beside CAPD, in the
// workload cluster's namespace. It talks to the workload cluster through
// the kubeconfig Secret Cluster API writes (<cluster>-kubeconfig) and to
// the engine through the host's Docker socket, which the management
// cluster's node has mounted for CAPD; the workload machines get no socket.
//
// The Deployment is owned by the Cluster object (an owner reference), so
// it is deleted with the Cluster, like everything else of the cluster in
// the management cluster. What the manager made in the engine — the load
// balancer containers of the cluster's LoadBalancer Services — is removed
// by Uninstall once the Cluster is gone, the way a real provider deletes
// the load balancers tagged with a cluster when the cluster is deleted
// (its Services may never be deleted: the workload cluster goes first). It
// must not be installed in the workload cluster itself.
package ccm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Engine is what Uninstall needs of the engine.
type Engine interface {
	ListContainers(ctx context.Context, f runtime.Filter) ([]runtime.Container, error)
	RemoveContainer(ctx context.Context, nameOrID string) error
}

// Installer installs the cloud-controller-manager of workload clusters.
type Installer struct {
	// Image is the cloud-controller-manager's image, loaded into the
	// management cluster. Required.
	Image string
	// LoadBalancerImage serves Services of type LoadBalancer; if unset,
	// the manager's default (CAPD's haproxy image).
	LoadBalancerImage string
	// RunID labels the load balancers it creates (runtime.LabelRunID);
	// if unset, none.
	RunID string
	// Verbosity is klog's -v; if zero, 2.
	Verbosity int
	// Engine is the engine the manager creates load balancers in, for
	// Uninstall. Required by Uninstall only.
	Engine Engine
	// NodeIPFamilies, if set, are the families of the nodes' InternalIPs
	// (the manager's --node-ip-families). If unset, Install sets IPv6
	// alone for a cluster whose Pod ranges are all IPv6, and leaves the
	// manager's default (IPv4, then IPv6) otherwise.
	NodeIPFamilies []corev1.IPFamily
}

// Name returns the name of the Deployment for cluster.
func Name(cluster string) string { return cluster + "-ccm" }

// Deployment returns the cloud-controller-manager Deployment of cluster in
// namespace, owned by the Cluster with the given UID.
func (in Installer) Deployment(namespace, cluster string, clusterUID string) *appsv1.Deployment {
	v := in.Verbosity
	if v == 0 {
		v = 2
	}
	args := []string{
		"--cloud-provider=docker",
		"--cluster-name=" + cluster,
		"--kubeconfig=/etc/kubernetes/workload/value",
		// The kubeconfig's own (admin) credentials: no token per
		// controller to request from the workload cluster.
		"--use-service-account-credentials=false",
		// One instance per cluster: nothing to elect against, and a
		// lease in a cluster being deleted only slows the shutdown.
		"--leader-elect=false",
		// Its health is the Deployment's; no serving port to secure.
		"--secure-port=0",
		fmt.Sprintf("--v=%d", v),
	}
	if in.LoadBalancerImage != "" {
		args = append(args, "--load-balancer-image="+in.LoadBalancerImage)
	}
	if in.RunID != "" {
		args = append(args, "--run-id="+in.RunID)
	}
	if len(in.NodeIPFamilies) > 0 {
		families := make([]string, len(in.NodeIPFamilies))
		for i, f := range in.NodeIPFamilies {
			families[i] = string(f)
		}
		args = append(args, "--node-ip-families="+strings.Join(families, ","))
	}
	labels := map[string]string{
		"app.kubernetes.io/name":     "capd-cloud-controller-manager",
		"app.kubernetes.io/instance": cluster,
		clusterv1.ClusterNameLabel:   cluster,
	}
	socket := corev1.HostPathSocket
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: Name(cluster), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster, UID: types.UID(clusterUID),
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:            "manager",
						Image:           in.Image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            args,
						VolumeMounts: []corev1.VolumeMount{
							{Name: "kubeconfig", MountPath: "/etc/kubernetes/workload", ReadOnly: true},
							{Name: "docker-sock", MountPath: "/var/run/docker.sock"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: cluster + "-kubeconfig", DefaultMode: ptr.To[int32](0o400),
						}}},
						{Name: "docker-sock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
							Path: "/var/run/docker.sock", Type: &socket,
						}}},
					},
					// The manager needs no API access in the management
					// cluster.
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](10),
				},
			},
		},
	}
}

// Install creates (or updates) the cloud-controller-manager of cluster in
// namespace. The Cluster must exist; the Deployment's pod starts once
// Cluster API has written the cluster's kubeconfig Secret.
func (in Installer) Install(ctx context.Context, c client.Client, namespace, cluster string) error {
	if in.Image == "" {
		return fmt.Errorf("install the cloud controller manager of %s/%s: Installer.Image is required", namespace, cluster)
	}
	owner := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, owner); err != nil {
		return fmt.Errorf("install the cloud controller manager of %s/%s: %w", namespace, cluster, err)
	}
	if len(in.NodeIPFamilies) == 0 && ipv6Only(owner.Spec.ClusterNetwork.Pods.CIDRBlocks) {
		in.NodeIPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	}
	want := in.Deployment(namespace, cluster, string(owner.UID))
	err := c.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		got := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			return fmt.Errorf("install the cloud controller manager of %s/%s: %w", namespace, cluster, err)
		}
		got.Spec = want.Spec
		err = c.Update(ctx, got)
	}
	if err != nil {
		return fmt.Errorf("install the cloud controller manager of %s/%s: %w", namespace, cluster, err)
	}
	return nil
}

// Uninstall removes the load balancer containers the manager of cluster
// created (labelled names.LabelCluster=cluster by names.Component) and
// returns their names. Call it once the Cluster is gone: its manager is
// gone with it, and nothing else would remove load balancers whose
// Services were never deleted.
func (in Installer) Uninstall(ctx context.Context, cluster string) ([]string, error) {
	if in.Engine == nil {
		return nil, fmt.Errorf("remove the load balancers of %s: Installer.Engine is required", cluster)
	}
	cs, err := in.Engine.ListContainers(ctx, runtime.Filter{Labels: map[string]string{
		names.LabelCluster: cluster, runtime.LabelCreatedBy: names.Component,
	}})
	if err != nil {
		return nil, fmt.Errorf("remove the load balancers of %s: %w", cluster, err)
	}
	var removed []string
	var errs []error
	for _, c := range cs {
		if err := in.Engine.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("remove load balancer %s of %s: %w", c.Name, cluster, err))
			continue
		}
		removed = append(removed, c.Name)
	}
	return removed, errors.Join(errs...)
}

// ipv6Only reports whether cidrs, a Cluster's Pod ranges, are all IPv6
// (and there is one at least).
func ipv6Only(cidrs []string) bool {
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil || p.Addr().Is4() {
			return false
		}
	}
	return len(cidrs) > 0
}
