package suite

import (
	"encoding/json"
	"fmt"
	"os"

	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// shared is what marshal hands the other Ginkgo processes.
type shared struct {
	ArtifactFolder        string
	ConfigPath            string
	ClusterctlConfigPath  string
	KubeconfigPath        string
	RunID                 string
	ManagementClusterName string
	SkipCleanup           bool
	Owner                 string
	// What setup changed in the config after loading it: the providers
	// with their release markers resolved, and the test extension's image
	// ("" when no selected spec needs it). The other processes take these
	// instead of resolving again.
	Providers     []config.Provider
	TestExtension string
	// Previous is build.clusterAPI.previous (nil when no selected spec
	// needs it) and PreviousClusterctl its clusterctl, as setup prepared
	// them.
	Previous           *config.PreviousClusterAPI
	PreviousClusterctl string
}

// marshal encodes what another process needs to connect to this
// environment (SynchronizedBeforeSuite's data).
func (e *Environment) marshal() ([]byte, error) {
	return json.Marshal(shared{
		ArtifactFolder: e.ArtifactFolder, ConfigPath: e.cfg.Path(), ClusterctlConfigPath: e.ClusterctlConfigPath,
		KubeconfigPath: e.BootstrapClusterProxy.GetKubeconfigPath(), RunID: e.RunID,
		ManagementClusterName: e.ManagementClusterName, SkipCleanup: e.SkipCleanup, Owner: e.tracker.Owner(),
		Providers: e.cfg.Providers, TestExtension: e.cfg.Build.ClusterAPI.Images.TestExtension,
		Previous: e.cfg.Build.ClusterAPI.Previous, PreviousClusterctl: e.previousClusterctl,
	})
}

// connect makes the Environment of another process from marshal's data.
// Call Close, not Teardown, on it: the process that ran Setup tears down.
func connect(data []byte, rt runtime.Runtime, scheme *apiruntime.Scheme) (*Environment, error) {
	var s shared
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("connect to the suite's environment: %w", err)
	}
	// Only the built-in providers' versions matter here, not their
	// rendered files, which node 1 has copied into the repository.
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		return nil, err
	}
	cfg.Providers, cfg.Build.ClusterAPI.Images.TestExtension = s.Providers, s.TestExtension
	cfg.Build.ClusterAPI.Previous = s.Previous
	e2e, err := upstream.E2EConfig(cfg, os.TempDir())
	if err != nil {
		return nil, err
	}
	env := &Environment{cfg: cfg, E2EConfig: e2e, ClusterctlConfigPath: s.ClusterctlConfigPath, ArtifactFolder: s.ArtifactFolder,
		RunID: s.RunID, ManagementClusterName: s.ManagementClusterName, SkipCleanup: s.SkipCleanup, Runtime: rt,
		previousClusterctl: s.PreviousClusterctl}
	if env.Runtime == nil {
		if env.Runtime, err = moby.New(moby.Config{}); err != nil {
			return nil, err
		}
		env.ownRuntime = true
	}
	if scheme == nil {
		scheme = DefaultScheme()
	}
	env.tracker = leak.NewTrackerFor(env.Runtime, s.RunID, s.Owner)
	env.BootstrapClusterProxy = newProxy(s.KubeconfigPath, scheme, env.Runtime)
	return env, nil
}
