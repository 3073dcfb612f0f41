// load is `capd-e2e load`: it loads images from the container engine
// (DOCKER_HOST) into the containerd of every node of a kind cluster,
// through the harness's runtime (framework/bootstrap.LoadImages): what
// `make iterate` does with the controller images it rebuilt, for the kept
// management cluster of `make up`.
//
//	capd-e2e load --cluster NAME REF...

package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

func newLoadCommand(streams streams) *cobra.Command {
	var cluster string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "load --cluster NAME REF...",
		Short: "Load images from the engine into every node of a kind cluster",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitCode(runLoad(cmd.Context(), cluster, timeout, args, streams.out, streams.err))
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "the kind cluster whose nodes get the images (its io.x-k8s.kind.cluster label)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	_ = cmd.MarkFlagRequired("cluster") // the flag exists: it cannot fail
	return cmd
}

func runLoad(ctx context.Context, cluster string, timeout time.Duration, refs []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rt, err := moby.New(moby.Config{})
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e load:", err)
		return 2
	}
	defer rt.Close()
	nodes, err := bootstrap.Nodes(ctx, rt, cluster)
	if err != nil {
		fmt.Fprintf(stderr, "capd-e2e load: %v (is it up?)\n", err)
		return 1
	}
	start := time.Now()
	if err := bootstrap.LoadImages(ctx, rt, nodes, refs); err != nil {
		fmt.Fprintln(stderr, "capd-e2e load:", err)
		return 1
	}
	fmt.Fprintf(stdout, "capd-e2e load: %s into %s in %s\n", strings.Join(refs, ", "), strings.Join(nodes, ", "), time.Since(start).Round(time.Millisecond))
	return 0
}
