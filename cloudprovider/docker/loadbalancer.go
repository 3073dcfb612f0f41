package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Labels on every load balancer container, besides runtime.LabelCreatedBy
// (Component) and, when Config.RunID is set, runtime.LabelRunID. They are
// not CAPD's runtime.LabelCluster: CAPD lists a cluster's containers by that
// label and must not mistake a load balancer for one of its machines.
const (
	// LabelCluster holds the Cluster API cluster name, for the harness's
	// leak check per cluster.
	LabelCluster = names.LabelCluster
	// LabelService holds the Service as "namespace/name".
	LabelService = names.LabelService
	// LabelServiceUID holds the Service's UID; a container under a load
	// balancer's name but without its UID is never touched.
	LabelServiceUID = names.LabelServiceUID
	// Component is the runtime.LabelCreatedBy value.
	Component = names.Component
)

// reloadRetryAfter is how soon the service controller asks again after
// haproxy was told to reload but does not listen on every port yet.
const reloadRetryAfter = 2 * time.Second

// LoadBalancerContainerName returns the name of the container serving the
// Service with uid in cluster: at most 40 characters of the cluster name,
// "-svclb-" and the first 16 hex digits of the UID, so that the name is at
// most 63 characters and stays a valid host name. Only characters the
// engine allows in names are kept.
func LoadBalancerContainerName(cluster string, uid types.UID) string {
	prefix := []byte(cluster)
	for i, c := range prefix {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			prefix[i] = '-'
		}
	}
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	var id []byte
	for _, c := range []byte(strings.ToLower(string(uid))) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			id = append(id, c)
		}
	}
	if len(id) > 16 {
		id = id[:16]
	}
	return string(prefix) + "-svclb-" + string(id)
}

// loadBalancer implements cloudprovider.LoadBalancer with one haproxy
// container per Service.
type loadBalancer struct {
	rt      Runtime
	cluster string
	network string
	image   string
	ulimits []runtime.Ulimit
	runID   string
	timeout time.Duration
	// machines finds a node's machine container, for its addresses; if
	// nil, nodes without an address in their status are left out.
	machines *instances
}

var _ cloudprovider.LoadBalancer = (*loadBalancer)(nil)

// GetLoadBalancerName implements cloudprovider.LoadBalancer: the container
// name. The clusterName argument (the manager's --cluster-name) is the
// provider's own.
func (l *loadBalancer) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return LoadBalancerContainerName(l.cluster, svc.UID)
}

// GetLoadBalancer implements cloudprovider.LoadBalancer. A container that
// exists without an address (it stopped) gives an empty status.
func (l *loadBalancer) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	name, err := l.name(svc)
	if err != nil {
		return nil, false, err
	}
	d, err := l.rt.InspectContainer(ctx, name)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get load balancer %q of service %s: %w", name, key(svc), err)
	}
	if err := l.owned(d, svc); err != nil {
		return nil, false, err
	}
	ingress, _, _ := l.ingress(d, svc)
	return &v1.LoadBalancerStatus{Ingress: ingress}, true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer: it runs the
// Service's haproxy container unless it runs already (a stopped one is
// replaced), writes its configuration when it differs, as CAPD does for its
// own load balancer (exec "cp /dev/stdin", read back, SIGHUP), and returns
// the container's address on the network once haproxy listens on every
// port. Until then it returns an api.RetryError.
func (l *loadBalancer) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	return l.ensure(ctx, svc, nodes)
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: the same as
// EnsureLoadBalancer, so that a container removed behind the provider's back
// comes back with the new node set.
func (l *loadBalancer) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	_, err := l.ensure(ctx, svc, nodes)
	return err
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer. A missing
// container is not an error; a container under the name that is not this
// Service's load balancer is, and is left alone.
func (l *loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	name, err := l.name(svc)
	if err != nil {
		return err
	}
	d, err := l.rt.InspectContainer(ctx, name)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete load balancer %q of service %s: %w", name, key(svc), err)
	}
	if err := l.owned(d, svc); err != nil {
		return err
	}
	if err := l.rt.RemoveContainer(ctx, name); err != nil {
		return fmt.Errorf("delete load balancer %q of service %s: %w", name, key(svc), err)
	}
	return nil
}

func key(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

func (l *loadBalancer) name(svc *v1.Service) (string, error) {
	if svc.UID == "" {
		return "", fmt.Errorf("load balancer of service %s: the service has no UID", key(svc))
	}
	return LoadBalancerContainerName(l.cluster, svc.UID), nil
}

// owned checks that container d is svc's load balancer in this cluster.
func (l *loadBalancer) owned(d runtime.ContainerDetails, svc *v1.Service) error {
	if d.Labels[LabelCluster] != l.cluster || d.Labels[LabelServiceUID] != string(svc.UID) {
		return fmt.Errorf("container %q is not the load balancer of service %s (uid %s) in cluster %q: its labels say cluster %q, service uid %q",
			d.Name, key(svc), svc.UID, l.cluster, d.Labels[LabelCluster], d.Labels[LabelServiceUID])
	}
	return nil
}

func (l *loadBalancer) labels(svc *v1.Service) map[string]string {
	labels := runtime.RunLabels(l.runID, Component, map[string]string{
		LabelCluster:    l.cluster,
		LabelService:    key(svc),
		LabelServiceUID: string(svc.UID),
	})
	if l.runID == "" {
		delete(labels, runtime.LabelRunID)
	}
	return labels
}

// ports returns the Service's ports, all of which must be TCP with a node
// port: haproxy forwards TCP, to the nodes.
func ports(svc *v1.Service) ([]haproxyPort, error) {
	if len(svc.Spec.Ports) == 0 {
		return nil, fmt.Errorf("load balancer of service %s: the service has no ports", key(svc))
	}
	var out []haproxyPort
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP && p.Protocol != "" {
			return nil, fmt.Errorf("load balancer of service %s: port %d is %s; only TCP is supported", key(svc), p.Port, p.Protocol)
		}
		if p.NodePort == 0 {
			return nil, fmt.Errorf("load balancer of service %s: port %d has no node port (allocateLoadBalancerNodePorts: false is not supported)", key(svc), p.Port)
		}
		out = append(out, haproxyPort{Port: p.Port, NodePort: p.NodePort})
	}
	return out, nil
}

// ingress returns the status entries for the container's addresses on the
// network, restricted to the Service's IP families when it names them
// (IPv4 only when it names none), and which families are served.
func (l *loadBalancer) ingress(d runtime.ContainerDetails, svc *v1.Service) (ingress []v1.LoadBalancerIngress, ipv4, ipv6 bool) {
	ep := d.Networks[l.network]
	wants := func(f v1.IPFamily) bool {
		if len(svc.Spec.IPFamilies) == 0 {
			return f == v1.IPv4Protocol
		}
		return slices.Contains(svc.Spec.IPFamilies, f)
	}
	if ep.IPv4 != "" && wants(v1.IPv4Protocol) {
		ingress, ipv4 = append(ingress, v1.LoadBalancerIngress{IP: ep.IPv4}), true
	}
	if ep.IPv6 != "" && wants(v1.IPv6Protocol) {
		ingress, ipv6 = append(ingress, v1.LoadBalancerIngress{IP: ep.IPv6}), true
	}
	return ingress, ipv4, ipv6
}

func (l *loadBalancer) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	name, err := l.name(svc)
	if err != nil {
		return nil, err
	}
	ps, err := ports(svc)
	if err != nil {
		return nil, err
	}
	d, err := l.container(ctx, name, svc)
	if err != nil {
		return nil, err
	}
	ingress, ipv4, ipv6 := l.ingress(d, svc)
	if len(ingress) == 0 {
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %q of service %s has no address of the service's IP families on network %q yet",
			name, key(svc), l.network), reloadRetryAfter)
	}
	cfg := haproxyConfig{
		Service: key(svc), UID: string(svc.UID), Cluster: l.cluster,
		IPv4: ipv4, IPv6: ipv6, Ports: ps,
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		cfg.HealthCheckNodePort = svc.Spec.HealthCheckNodePort
	}
	cfg.Servers, cfg.Skipped = servers(nodes, ipv4, l.machineAddresses(ctx))
	reloaded, err := l.configure(ctx, name, cfg.render())
	if err != nil {
		return nil, fmt.Errorf("configure load balancer %q of service %s: %w", name, key(svc), err)
	}
	missing, err := l.notListening(ctx, name, ps)
	if err != nil {
		return nil, fmt.Errorf("check load balancer %q of service %s: %w", name, key(svc), err)
	}
	if len(missing) > 0 {
		if !reloaded {
			// The configuration is current but haproxy does not serve it:
			// the last reload failed or the signal came before haproxy could
			// take it. Ask again.
			if err := l.rt.Kill(ctx, name, "SIGHUP"); err != nil {
				return nil, fmt.Errorf("reload load balancer %q of service %s: %w", name, key(svc), err)
			}
		}
		return nil, api.NewRetryError(fmt.Sprintf("load balancer %q of service %s does not listen on port(s) %v yet (reloading haproxy; see the container's log if this persists)",
			name, key(svc), missing), reloadRetryAfter)
	}
	return &v1.LoadBalancerStatus{Ingress: ingress}, nil
}

// container returns svc's running load balancer container, running a new
// one if there is none or it stopped.
func (l *loadBalancer) container(ctx context.Context, name string, svc *v1.Service) (runtime.ContainerDetails, error) {
	d, err := l.rt.InspectContainer(ctx, name)
	switch {
	case errors.Is(err, runtime.ErrNotFound):
	case err != nil:
		return d, fmt.Errorf("get load balancer %q of service %s: %w", name, key(svc), err)
	default:
		if err := l.owned(d, svc); err != nil {
			return d, err
		}
		if d.State.Running {
			return d, nil
		}
		// haproxy exited (or the container was stopped): start afresh, so
		// the container gets an address and the image's entrypoint again.
		if err := l.rt.RemoveContainer(ctx, name); err != nil {
			return d, fmt.Errorf("replace stopped load balancer %q of service %s: %w", name, key(svc), err)
		}
	}
	spec := runtime.ContainerSpec{
		Name:    name,
		Image:   l.image,
		Labels:  l.labels(svc),
		Network: l.network,
		Ulimits: slices.Clone(l.ulimits),
	}
	if _, err := l.rt.RunContainer(ctx, spec); err != nil {
		return d, fmt.Errorf("run load balancer %q of service %s: %w", name, key(svc), err)
	}
	if d, err = l.rt.InspectContainer(ctx, name); err != nil {
		return d, fmt.Errorf("get load balancer %q of service %s: %w", name, key(svc), err)
	}
	return d, nil
}

// servers returns the backend servers: each node's first InternalIP of the
// load balancer's family (IPv4 when it has an IPv4 address), sorted by node
// name, and the nodes left out for want of one. A node whose status has no
// such address (it registered, but the node controller, which runs beside
// the service controller, has not initialized it yet) gets the addresses
// lookup finds for it: the service controller does not update a load
// balancer when a node's addresses change, so a node left out here would
// stay out until the next change of the node set.
func servers(nodes []*v1.Node, ipv4 bool, lookup func(*v1.Node) ([]v1.NodeAddress, error)) (out []haproxyServer, skipped []string) {
	family := "IPv6"
	if ipv4 {
		family = "IPv4"
	}
	for _, n := range nodes {
		addr := internalIP(n.Status.Addresses, ipv4)
		why := "no " + family + " InternalIP"
		if addr == "" && lookup != nil {
			addrs, err := lookup(n)
			switch {
			case err != nil:
				why += " (its machine: " + err.Error() + ")"
			default:
				addr = internalIP(addrs, ipv4)
			}
		}
		if addr == "" {
			skipped = append(skipped, n.Name+": "+why)
			continue
		}
		out = append(out, haproxyServer{Name: n.Name, Address: addr})
	}
	slices.SortFunc(out, func(a, b haproxyServer) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(skipped)
	return out, skipped
}

// internalIP returns the first InternalIP of addrs of the family, or "".
func internalIP(addrs []v1.NodeAddress, ipv4 bool) string {
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a.Address)
		if a.Type == v1.NodeInternalIP && err == nil && ip.Is4() == ipv4 {
			return ip.String()
		}
	}
	return ""
}

// machineAddresses returns the addresses of node's machine container, as
// the node controller would set them.
func (l *loadBalancer) machineAddresses(ctx context.Context) func(*v1.Node) ([]v1.NodeAddress, error) {
	if l.machines == nil {
		return nil
	}
	return func(n *v1.Node) ([]v1.NodeAddress, error) {
		d, err := l.machines.container(ctx, n)
		if err != nil {
			return nil, err
		}
		return l.machines.addresses(d, n.Name)
	}
}

// configure writes config to the container unless it holds it already,
// checks it by reading it back and tells haproxy to reload. It reports
// whether it did.
func (l *loadBalancer) configure(ctx context.Context, name, config string) (bool, error) {
	current, err := l.output(ctx, name, nil, "cp", HAProxyConfigPath, "/dev/stdout")
	if err != nil {
		return false, err
	}
	if string(current) == config {
		return false, nil
	}
	if _, err := l.output(ctx, name, strings.NewReader(config), "cp", "/dev/stdin", HAProxyConfigPath); err != nil {
		return false, err
	}
	// Read it back before the reload, as CAPD does (cluster-api#10356): the
	// exec may end before the file is complete.
	back, err := l.output(ctx, name, nil, "cp", HAProxyConfigPath, "/dev/stdout")
	if err != nil {
		return false, err
	}
	if string(back) != config {
		return false, fmt.Errorf("%s in container %q differs from what was written", HAProxyConfigPath, name)
	}
	if err := l.rt.Kill(ctx, name, "SIGHUP"); err != nil {
		return false, err
	}
	return true, nil
}

// notListening returns the ports of ps that nothing in the container
// listens on.
func (l *loadBalancer) notListening(ctx context.Context, name string, ps []haproxyPort) ([]int32, error) {
	tcp, err := l.output(ctx, name, nil, "cat", "/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	// Without IPv6 in the container there is no tcp6 table; that is fine.
	tcp6, _ := l.output(ctx, name, nil, "cat", "/proc/net/tcp6")
	listening := listeningPorts(string(tcp) + "\n" + string(tcp6))
	var missing []int32
	for _, p := range ps {
		if !listening[p.Port] {
			missing = append(missing, p.Port)
		}
	}
	return missing, nil
}

// output runs cmd in the container and returns its standard output; a
// non-zero exit is a *runtime.ExitError carrying its standard error.
func (l *loadBalancer) output(ctx context.Context, container string, stdin io.Reader, cmd ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	res, err := l.rt.Exec(ctx, container, runtime.ExecOptions{Cmd: cmd, Stdin: stdin, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, &runtime.ExitError{Container: container, Cmd: cmd, ExitCode: res.ExitCode, Stderr: stderr.Bytes()}
	}
	return stdout.Bytes(), nil
}
