package suite

import (
	"regexp"

	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// SetupInput is the input of Setup.
type SetupInput struct {
	// ConfigPath is the e2e config: the harness's config/e2e.yaml, or a
	// provider's file that config.Load merges over it. Required.
	ConfigPath string

	// ArtifactFolder receives everything the suite writes, in upstream's
	// layout. Required; created if missing.
	ArtifactFolder string

	// ClusterctlConfigPath, if set, is an existing clusterctl config (and
	// repository) used as is; if unset, a local repository is created in
	// ArtifactFolder/repository.
	ClusterctlConfigPath string

	// KubeconfigPath, if set, is the management cluster to use instead of
	// creating a kind cluster (upstream's -e2e.use-existing-cluster uses
	// the current kubeconfig). Images are then not loaded: the cluster
	// must be able to get them.
	KubeconfigPath string

	// SkipCleanup keeps the management cluster after Teardown.
	SkipCleanup bool

	// Runtime is the container engine. If unset, moby.New(moby.Config{})
	// (DOCKER_HOST), closed by Teardown.
	Runtime runtime.Runtime

	// Scheme is the management cluster client's scheme. If unset,
	// DefaultScheme: client-go's, Cluster API's and CAPD's types. A
	// provider adds its own types to DefaultScheme().
	Scheme *apiruntime.Scheme

	// Requirements are what the specs the suite will run need of the
	// config (Suite finds those of the selected specs with Ginkgo's
	// PreviewSpecs): checked before anything is created. If nil, none.
	Requirements []Requirement

	// OnlyRequiredExtensions installs the built-in test runtime extension
	// only when a Requirement asks for it (TestExtension), instead of on
	// every run: Suite sets it when it knows the selected specs
	// (Options.Requirements).
	OnlyRequiredExtensions bool

	// RunID labels what the run creates and suffixes the management
	// cluster's name. If unset, $CAPD_E2E_RUN_ID (scripts/ci-e2e.sh sets
	// it, to check for leftovers by it afterwards), else a new
	// runtime.NewRunID().
	RunID string
}

// EnvRunID is the environment variable that gives a run its id.
const EnvRunID = "CAPD_E2E_RUN_ID"

var runIDRE = regexp.MustCompile(`^[a-z0-9]{1,12}$`)
