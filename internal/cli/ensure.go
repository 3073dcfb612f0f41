// engine ensure and engine podman make the host's engine ready for the
// E2E (internal/enginesetup): what scripts/ci-e2e.sh, make images and make
// test run first.
//
//	capd-e2e engine ensure [--privileged-nesting]
//	    the engine at DOCKER_HOST answers (under CAPD_E2E_FIX_ENGINE,
//	    dockerd is started), and, with --privileged-nesting, can run
//	    kind's and CAPD's privileged nested containers; prints the
//	    version line
//	capd-e2e engine podman [--check | --stop]
//	    rootful Podman's Docker-API service, ready: prints its DOCKER_HOST;
//	    --check only checks its settings; --stop stops the service
//	    capd-e2e started
//
// Without CAPD_E2E_FIX_ENGINE they change nothing on the host: they say
// what is wrong and the command that would fix it, and exit 1.

package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/internal/enginesetup"
)

// setupTimeout bounds a setup, which may install packages.
const setupTimeout = 15 * time.Minute

func engineSetupCommands(s streams) []*cobra.Command {
	// setup runs do on this host, under setupTimeout; its error fails the
	// command (exit code 1).
	setup := func(cmd *cobra.Command, do func(context.Context, *enginesetup.Host) error) error {
		mode, err := enginesetup.ParseMode(os.Getenv(enginesetup.EnvFix))
		if err != nil {
			return usageError(err)
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), setupTimeout)
		defer cancel()
		if err := do(ctx, &enginesetup.Host{Mode: mode, Log: s.err}); err != nil {
			return exitError{code: 1, err: err}
		}
		return nil
	}
	var nesting bool
	ensure := &cobra.Command{
		Use:   "ensure",
		Short: "Check (under CAPD_E2E_FIX_ENGINE, fix) that the engine at DOCKER_HOST answers and can run kind's and CAPD's nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return setup(cmd, func(ctx context.Context, h *enginesetup.Host) error {
				info, err := h.EnsureEngine(ctx, nesting)
				if info.Version != "" {
					fmt.Fprintln(s.out, versionLine(info))
				}
				return err
			})
		},
	}
	ensure.Flags().BoolVar(&nesting, "privileged-nesting", false, "also check that it can run kind's and CAPD's privileged, nested containers")
	var check, stop bool
	podman := &cobra.Command{
		Use:   "podman",
		Short: "Rootful Podman's Docker-API service, ready for the E2E: prints its DOCKER_HOST",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return setup(cmd, func(ctx context.Context, h *enginesetup.Host) error {
				switch {
				case stop:
					return h.StopPodman()
				case check:
					_, err := h.CheckPodman()
					return err
				}
				dockerHost, err := h.EnsurePodman(ctx)
				if err == nil {
					fmt.Fprintln(s.out, dockerHost)
				}
				return err
			})
		},
	}
	podman.Flags().BoolVar(&check, "check", false, "only check (under CAPD_E2E_FIX_ENGINE, apply) the host settings")
	podman.Flags().BoolVar(&stop, "stop", false, "stop the service capd-e2e started (never another)")
	podman.MarkFlagsMutuallyExclusive("check", "stop")
	return []*cobra.Command{ensure, podman}
}
