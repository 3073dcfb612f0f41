// engine is `capd-e2e engine`: it reports on the container engine at
// DOCKER_HOST through the harness's runtime, so that the scripts need no
// docker CLI (which a Podman host may not have) and tell Docker from
// Podman by what the engine says, not by its version number:
//
//	capd-e2e engine version
//	    one line: "docker 29.1.3 unix:///var/run/docker.sock" or
//	    "podman 4.3.1 unix:///run/podman/podman.sock"; exit 1, with why,
//	    when no engine answers.
//	capd-e2e engine objects
//	    every container, volume and network, one per line ("container
//	    ID", "volume NAME", "network ID"), sorted: what a leak check
//	    compares before and after.
//	capd-e2e engine ensure, capd-e2e engine podman
//	    make the engine ready for the E2E (ensure.go)
//	capd-e2e engine dump [--since UNIX] DIR
//	    the engine's state for a job's artifacts: engine-info.txt,
//	    engine-ps.txt (every container), engine-images.txt and
//	    engine-events.log (the events since --since).

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

func newEngineCommand(streams streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Report on the container engine at DOCKER_HOST through the harness's runtime",
	}
	withEngine := func(cmd *cobra.Command, do func(ctx context.Context, rt *moby.Runtime) error) error {
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
		defer cancel()
		rt, err := moby.New(moby.Config{})
		if err == nil {
			defer rt.Close()
			err = do(ctx, rt)
		}
		return err
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: `One line: "docker 29.1.3 unix:///var/run/docker.sock" or "podman 4.3.1 unix:///run/podman/podman.sock"`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEngine(cmd, func(ctx context.Context, rt *moby.Runtime) error {
				info, err := rt.Info(ctx)
				if err == nil {
					fmt.Fprintln(streams.out, versionLine(info))
				}
				return err
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "objects",
		Short: "Every container, volume and network, one per line, sorted: what a leak check compares",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEngine(cmd, func(ctx context.Context, rt *moby.Runtime) error {
				lines, err := objects(ctx, rt)
				for _, l := range lines {
					fmt.Fprintln(streams.out, l)
				}
				return err
			})
		},
	})
	var since int64
	dumpCmd := &cobra.Command{
		Use:   "dump DIR",
		Short: "The engine's state for a job's artifacts: engine-info.txt, engine-ps.txt, engine-images.txt, engine-events.log",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEngine(cmd, func(ctx context.Context, rt *moby.Runtime) error { return dump(ctx, rt, args[0], since) })
		},
	}
	dumpCmd.Flags().Int64Var(&since, "since", 0, "the events since this Unix time (default: none)")
	cmd.AddCommand(dumpCmd)
	cmd.AddCommand(engineSetupCommands(streams)...)
	return cmd
}

func versionLine(info runtime.EngineInfo) string {
	kind := "docker"
	if info.Podman {
		kind = "podman"
	}
	return fmt.Sprintf("%s %s %s", kind, info.Version, info.Endpoint)
}

// engine is what dump and objects need of the runtime.
type engine interface {
	Info(ctx context.Context) (runtime.EngineInfo, error)
	Events(ctx context.Context, since, until time.Time) ([]runtime.Event, error)
	ListContainers(ctx context.Context, f runtime.Filter) ([]runtime.Container, error)
	ListImages(ctx context.Context) ([]runtime.Image, error)
	ListVolumes(ctx context.Context, f runtime.Filter) ([]runtime.Volume, error)
	ListNetworks(ctx context.Context, f runtime.Filter) ([]runtime.Network, error)
}

var _ engine = runtime.Runtime(nil)

// dump writes each file it can and returns every error, so that one
// failed call (or a full disk) costs only its own file.
func dump(ctx context.Context, rt engine, dir string, since int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	write := func(name string, fill func(w io.Writer) error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, err)
			return
		}
		if err := fill(f); err != nil {
			fmt.Fprintf(f, "error: %v\n", err)
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	write("engine-info.txt", func(w io.Writer) error {
		i, err := rt.Info(ctx)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "engine: %s\nendpoint: %s\nname: %s\napi: %s\nos: %s\narch: %s\nstorage driver: %s\ncgroup: %s (%s)\ncpus: %d\nmemory: %d\nrootless: %v\n",
			i.Product(), i.Endpoint, i.Name, i.APIVersion, i.OS, i.Arch, i.StorageDriver, i.CgroupVersion, i.CgroupDriver, i.NCPU, i.MemTotal, i.Rootless)
		return err
	})
	write("engine-ps.txt", func(w io.Writer) error {
		cs, err := rt.ListContainers(ctx, runtime.Filter{})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tIMAGE\tSTATE\tRUN ID")
		for _, c := range cs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", short(c.ID), c.Name, c.Image, c.State, c.Labels[runtime.LabelRunID])
		}
		return tw.Flush()
	})
	write("engine-images.txt", func(w io.Writer) error {
		imgs, err := rt.ListImages(ctx)
		if err != nil {
			return err
		}
		sort.Slice(imgs, func(i, j int) bool { return strings.Join(imgs[i].RepoTags, ",") < strings.Join(imgs[j].RepoTags, ",") })
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTAGS\tSIZE\tCREATED")
		for _, i := range imgs {
			created := "-" // reproducible builds set none
			if i.Created.Unix() > 0 {
				created = i.Created.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d MB\t%s\n", short(strings.TrimPrefix(i.ID, "sha256:")), strings.Join(i.RepoTags, ","), i.Size>>20, created)
		}
		return tw.Flush()
	})
	if since > 0 {
		write("engine-events.log", func(w io.Writer) error {
			evs, err := rt.Events(ctx, time.Unix(since, 0), time.Now())
			for _, e := range evs {
				fmt.Fprintf(w, "%s %s %s %s %s\n", e.Time.UTC().Format(time.RFC3339Nano), e.Type, e.Action, short(e.ID), attrs(e.Attributes))
			}
			return err
		})
	}
	return errors.Join(errs...)
}

func objects(ctx context.Context, rt engine) ([]string, error) {
	var out []string
	cs, err := rt.ListContainers(ctx, runtime.Filter{})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		out = append(out, "container "+c.ID)
	}
	vs, err := rt.ListVolumes(ctx, runtime.Filter{})
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		out = append(out, "volume "+v.Name)
	}
	ns, err := rt.ListNetworks(ctx, runtime.Filter{})
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		out = append(out, "network "+n.ID)
	}
	sort.Strings(out)
	return out, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func attrs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
