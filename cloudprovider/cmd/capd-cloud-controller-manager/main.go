// Command capd-cloud-controller-manager is the cloud-controller-manager of
// one CAPD workload cluster: Kubernetes' cloud-node, cloud-node-lifecycle
// and service controllers over the docker cloud provider
// (cloudprovider/docker).
//
// It runs in the management cluster, one per workload cluster, with that
// cluster's kubeconfig (--kubeconfig), its Cluster API name
// (--cluster-name) and the engine's socket (DOCKER_HOST, or
// /var/run/docker.sock mounted from the host). It must not run in the
// workload machines, which have no engine socket. The route controller is
// not started: CAPD clusters have no cloud routes.
package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/capd-e2e/capd-e2e/cloudprovider/docker"
	"github.com/capd-e2e/capd-e2e/cloudprovider/nodelabels"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// dockerFlags are the provider's own flags; the rest are the standard
// cloud-controller-manager's.
type dockerFlags struct {
	network     string
	image       string
	nofile      int64
	runID       string
	callTimeout time.Duration
	families    []string
}

func (f *dockerFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.network, "docker-network", docker.DefaultNetwork,
		"Engine network of the cluster's machines: their InternalIPs and the load balancers' ingress IPs are their addresses on it.")
	fs.StringVar(&f.image, "load-balancer-image", docker.DefaultLoadBalancerImage,
		"haproxy image that serves Services of type LoadBalancer (haproxy in master-worker mode on "+docker.HAProxyConfigPath+", reloaded by SIGHUP).")
	fs.Int64Var(&f.nofile, "load-balancer-nofile", docker.DefaultLoadBalancerUlimits[0].Hard,
		"Open-file limit (soft and hard) of load balancer containers; must not exceed the engine's own limit.")
	fs.StringVar(&f.runID, "run-id", "",
		"Harness run id to label load balancer containers with ("+runtime.LabelRunID+"); none if empty.")
	fs.DurationVar(&f.callTimeout, "docker-call-timeout", docker.DefaultCallTimeout,
		"Bound on each call the controllers make to the provider (a lookup, a load balancer reconciliation).")
	fs.StringSliceVar(&f.families, "node-ip-families", familyFlag(docker.DefaultNodeIPFamilies),
		"IP families of the nodes' InternalIPs, in order (IPv4, IPv6): the cluster's; IPv6 alone for an IPv6-only cluster.")
}

func main() {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("initialize command options: %v", err)
	}
	// There is one provider in this binary.
	opts.KubeCloudShared.CloudProvider.Name = docker.ProviderName

	var df dockerFlags
	fss := cliflag.NamedFlagSets{}
	df.addTo(fss.FlagSet("docker cloud provider"))

	var clusterNameSet func() bool
	cmd := app.NewCloudControllerManagerCommand(opts, func(c *config.CompletedConfig) cloudprovider.Interface {
		cloud, err := newCloud(c, &df, clusterNameSet())
		if err != nil {
			klog.Fatalf("docker cloud provider: %v", err)
		}
		return cloud
	}, controllers(), names.CCMControllerAliases(), fss, wait.NeverStop)
	cmd.Use = "capd-cloud-controller-manager"
	clusterNameSet = func() bool { return cmd.Flags().Changed("cluster-name") }
	os.Exit(cli.Run(cmd))
}

// controllers are the standard cloud-node, cloud-node-lifecycle and service
// controllers, under their standard client names (whose RBAC the API
// server bootstraps), and nodelabels, which labels Nodes that CAPD
// initialised before the cloud-node controller could (see its package
// doc). The route controller is left out.
func controllers() map[string]app.ControllerInitFuncConstructor {
	c := maps.Clone(app.DefaultInitFuncConstructors)
	delete(c, names.NodeRouteController)
	c[nodelabels.Name] = app.ControllerInitFuncConstructor{
		// The cloud-node controller's client and RBAC.
		InitContext: app.ControllerInitContext{ClientName: "node-controller"},
		Constructor: func(initCtx app.ControllerInitContext, cfg *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				instances, ok := cloud.InstancesV2()
				if !ok {
					return nil, false, nil
				}
				nc, err := nodelabels.New(cfg.SharedInformers.Core().V1().Nodes(), cfg.ClientBuilder.ClientOrDie(initCtx.ClientName), instances)
				if err != nil {
					return nil, false, err
				}
				go nc.Run(ctx)
				return nil, true, nil
			}
		},
	}
	return c
}

// newCloud makes the provider from the manager's configuration and the
// engine at DOCKER_HOST.
func newCloud(c *config.CompletedConfig, df *dockerFlags, clusterNameSet bool) (cloudprovider.Interface, error) {
	shared := c.ComponentConfig.KubeCloudShared
	if name := shared.CloudProvider.Name; name != docker.ProviderName {
		return nil, fmt.Errorf("--cloud-provider=%q: this manager serves only %q", name, docker.ProviderName)
	}
	if shared.CloudProvider.CloudConfigFile != "" {
		return nil, fmt.Errorf("--cloud-config=%q: the provider takes no configuration file; use its flags", shared.CloudProvider.CloudConfigFile)
	}
	// The default ("kubernetes") would match no CAPD machine, and every node
	// would look like another cluster's.
	if !clusterNameSet {
		return nil, fmt.Errorf("--cluster-name is required: the Cluster API name of the workload cluster")
	}
	if df.callTimeout <= 0 {
		return nil, fmt.Errorf("--docker-call-timeout=%s: must be positive", df.callTimeout)
	}
	if df.nofile <= 0 {
		return nil, fmt.Errorf("--load-balancer-nofile=%d: must be positive", df.nofile)
	}
	ulimits := []runtime.Ulimit{{Name: "nofile", Soft: df.nofile, Hard: df.nofile}}
	for _, u := range docker.DefaultLoadBalancerUlimits {
		if u.Name != "nofile" {
			ulimits = append(ulimits, u)
		}
	}
	var families []v1.IPFamily
	for _, f := range df.families {
		switch strings.ToLower(f) {
		case "ipv4":
			families = append(families, v1.IPv4Protocol)
		case "ipv6":
			families = append(families, v1.IPv6Protocol)
		default:
			return nil, fmt.Errorf("--node-ip-families: %q is neither IPv4 nor IPv6", f)
		}
	}
	rt, err := moby.New(moby.Config{})
	if err != nil {
		return nil, err
	}
	// The engine connection lives as long as the process.
	return docker.New(docker.Config{
		Runtime:             rt,
		ClusterName:         shared.ClusterName,
		Network:             df.network,
		LoadBalancerImage:   df.image,
		LoadBalancerUlimits: ulimits,
		RunID:               df.runID,
		CallTimeout:         df.callTimeout,
		NodeIPFamilies:      families,
	})
}

// familyFlag is families as the values of --node-ip-families.
func familyFlag(families []v1.IPFamily) []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = string(f)
	}
	return out
}
