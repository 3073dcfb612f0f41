// Command capd-e2e-load loads images from the container engine (DOCKER_HOST)
// into the containerd of every node of a kind cluster, through the
// harness's runtime (framework/bootstrap.LoadImages): what `make iterate`
// does with the controller images it rebuilt, for the kept management
// cluster of `make up`.
//
// Usage:
//
//	capd-e2e-load -cluster NAME REF...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("capd-e2e-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cluster := fs.String("cluster", "", "the kind cluster whose nodes get the images (its io.x-k8s.kind.cluster label)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cluster == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "capd-e2e-load: usage: capd-e2e-load -cluster NAME REF...")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rt, err := moby.New(moby.Config{})
	if err != nil {
		fmt.Fprintln(stderr, "capd-e2e-load:", err)
		return 2
	}
	defer rt.Close()
	nodes, err := bootstrap.Nodes(ctx, rt, *cluster)
	if err != nil {
		fmt.Fprintf(stderr, "capd-e2e-load: %v (is it up?)\n", err)
		return 1
	}
	start := time.Now()
	if err := bootstrap.LoadImages(ctx, rt, nodes, fs.Args()); err != nil {
		fmt.Fprintln(stderr, "capd-e2e-load:", err)
		return 1
	}
	fmt.Fprintf(stdout, "capd-e2e-load: %s into %s in %s\n", strings.Join(fs.Args(), ", "), strings.Join(nodes, ", "), time.Since(start).Round(time.Millisecond))
	return 0
}
