// Command cert-manager-substitute runs package certmanager's controller in
// a cluster: it issues the self-signed Certificates Cluster API's providers
// declare and injects their CA into webhook configurations and CRDs, where
// cert-manager's own images are not available. See
// github.com/capd-e2e/capd-e2e/framework/certmanager.
//
// Flags:
//
//	--health-probe-bind-address  /healthz and /readyz (default ":8081")
//	--metrics-bind-address       Prometheus metrics; "0" disables (default "0")
//	--leader-elect               leader election (default false); one replica needs none
//	--leader-election-namespace  namespace of the Lease (default $POD_NAMESPACE, else "cert-manager")
//
//	--v                          log verbosity: 0 info, 1 debug (default 0)
//
// It logs JSON lines to stderr through log/slog (controller-runtime's zap
// logger would add modules to go.mod for nothing).
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capd-e2e/capd-e2e/framework/certmanager"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-substitute:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		probeAddr   string
		metricsAddr string
		leaderElect bool
		leaderNS    string
	)
	defaultNS := os.Getenv("POD_NAMESPACE")
	if defaultNS == "" {
		defaultNS = "cert-manager"
	}
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", `address of the metrics endpoint; "0" disables it`)
	flag.BoolVar(&leaderElect, "leader-elect", false, "use leader election (only needed with more than one replica)")
	flag.StringVar(&leaderNS, "leader-election-namespace", defaultNS, "namespace of the leader election Lease")
	verbosity := flag.Int("v", 0, "log verbosity: 0 info, 1 debug")
	flag.Parse()
	// logr's V(n) is slog level -n.
	handler := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-*verbosity)})
	ctrl.SetLogger(logr.FromSlogHandler(handler))

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   certmanager.CacheOptions(),
		Client:                  certmanager.ClientOptions(),
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        certmanager.Name,
		LeaderElectionNamespace: leaderNS,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := certmanager.Setup(mgr, certmanager.Options{}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readyz check: %w", err)
	}
	ctrl.Log.Info("Starting", "name", certmanager.Name)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
