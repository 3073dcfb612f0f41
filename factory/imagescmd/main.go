// Package imagescmd is `capd-e2e images`: it builds every image
// config/e2e.yaml names, from the Go module proxy and Debian's archive
// only, into the local container engine, and renders the Cluster API
// providers' components YAML and the CNI manifest. It is what `make
// images` runs.
//
//	capd-e2e images [--config config/e2e.yaml] [--only id,...] [--rebuild id,...] [--jobs N] [--copy-from ENDPOINT] [--list] [--render DIR]
//
// The config may be a provider's, merged over the harness's (config.Load):
// its build.goImages are built too. Images whose inputs-hash label matches
// the plan are reused, so a second run with nothing changed only checks
// labels; images may also be pulled (build.registry.policy, IMAGE_POLICY,
// IMAGE_MIRROR) and published (IMAGE_PUBLISH). With --copy-from (or
// CAPD_E2E_IMAGES_FROM) another engine on the machine gives the images it
// holds with current inputs (Docker's store, for a run on Podman's
// service): streamed from its image save into this engine's image load.
// Only the targets (node images, load balancer, controllers, -only's
// steps) and what they need are provided: for the specs the suite selects
// (--suite, --label-filter, --focus, --skip; see suite.go), or all of them.
// Steps build --jobs at a time (CAPD_E2E_BUILD_JOBS, else twice the number
// of CPUs) within a memory budget of three quarters of the memory
// available at start; the longest chain of steps starts first. Only one go
// command compiles at a time (gobuild.Slots), with GOGC=400 unless GOGC is
// set; module downloads, Debian root file systems, image assembly and loads
// go on beside it.
// Environment: CAPD_E2E_CACHE (default $HOME/.cache/capd-e2e)
// holds Go wrapper modules, build logs and compiled binaries; DOCKER_HOST
// selects the engine as for the Docker CLI; CAPI_SOURCE_DIR builds Cluster
// API from a working tree.
package imagescmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capd-e2e/capd-e2e/factory/buildspec"
	cmimage "github.com/capd-e2e/capd-e2e/factory/certmanagerimage"
	"github.com/capd-e2e/capd-e2e/factory/debian"
	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/goimages"
	"github.com/capd-e2e/capd-e2e/factory/kindbase"
	"github.com/capd-e2e/capd-e2e/factory/nodeimage"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/factory/registry"
	"github.com/capd-e2e/capd-e2e/framework/cni"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/images"
	"github.com/capd-e2e/capd-e2e/framework/repository"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
	"github.com/capd-e2e/capd-e2e/internal/hoststat"
)

// Command returns the `images` command, writing to stdout and stderr.
func Command(stdout, stderr io.Writer) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Provide the images the selected specs need: built from the Go module proxy and Debian, or pulled (build.registry)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd.Flags())
			if err != nil {
				return err
			}
			return run(cmd.Context(), o, stdout)
		},
	}
	f.define(cmd.Flags())
	return cmd
}

// options are the command-line flags.
type options struct {
	config    string
	only      []string
	rebuild   []string
	list      bool
	renderDir string
	verbose   bool
	jobs      int
	copyFrom  string
	// copyFromSet: -copy-from or CAPD_E2E_IMAGES_FROM was given (empty
	// turns copying off); otherwise the default applies (copySource).
	copyFromSet bool

	// suite is the Ginkgo suite whose selected specs the images are for;
	// suiteSet: -suite or E2E_SUITE_DIR was given, else the harness's e2e/.
	suite    string
	suiteSet bool
	// labelFilter, focus and skip select the suite's specs, as Ginkgo's
	// flags of the same names.
	labelFilter, focus string
	skip               []string
	useExistingCluster bool
	// selectionFile is a selection written earlier (-selection), used
	// instead of compiling the suite; selectionOut is where to keep the
	// one the suite wrote.
	selectionFile, selectionOut string
}

// EnvJobs sets the default of -jobs.
const EnvJobs = "CAPD_E2E_BUILD_JOBS"

// EnvCopyFrom sets the default of -copy-from.
const EnvCopyFrom = "CAPD_E2E_IMAGES_FROM"

// flags are the command-line flags as parsed, before options checks
// them.
type flags struct {
	o             options
	only, rebuild []string
	skip          string
	// envErr is a bad environment default, reported when the command runs
	// (not when --help is asked for).
	envErr error
	// copyFromEnv and suiteEnv: the environment set the default of
	// --copy-from and --suite (to empty, maybe).
	copyFromEnv, suiteEnv bool
}

// define registers the flags on fs, their defaults from the environment.
func (f *flags) define(fs *pflag.FlagSet) {
	o := &f.o
	fs.StringVar(&o.config, "config", "config/e2e.yaml", "the E2E config file")
	fs.StringSliceVar(&f.only, "only", nil, "step IDs to build, with their dependencies, whatever specs are selected (default: what the selected specs need)")
	fs.StringSliceVar(&f.rebuild, "rebuild", nil, "step IDs to build even when up to date")
	fs.BoolVar(&o.list, "list", false, "print the plan and what would be built, build nothing")
	fs.StringVar(&o.renderDir, "render", "", "also render the built-in providers' components and the CNI manifest into this directory")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "also print the go command's output (it always goes to a log file)")
	copyFrom, copyFromSet := os.LookupEnv(EnvCopyFrom)
	f.copyFromEnv = copyFromSet
	fs.StringVar(&o.copyFrom, "copy-from", copyFrom, "another engine's endpoint: images it holds with current inputs are copied from it instead of built (default: "+EnvCopyFrom+"; unset, on Podman: a Docker engine at "+defaultDockerHost+" when one answers; empty: none)")
	jobs := 2 * goruntime.NumCPU()
	if v := os.Getenv(EnvJobs); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			f.envErr = fmt.Errorf("%s=%q: want a number of steps, 1 or more", EnvJobs, v)
		} else {
			jobs = n
		}
	}
	fs.IntVar(&o.jobs, "jobs", jobs, "how many steps build at once, within the memory budget; one of them compiles Go at a time (default: "+EnvJobs+", else twice the number of CPUs)")
	suiteDir, suiteSet := os.LookupEnv(EnvSuiteDir)
	f.suiteEnv = suiteSet
	fs.StringVar(&o.suite, "suite", suiteDir, "the Ginkgo suite (a package directory) whose selected specs the images are for: compiled, and asked what the specs --label-filter, --focus and --skip select need (default: "+EnvSuiteDir+", else the harness's e2e/; empty: no suite)")
	fs.StringVar(&o.labelFilter, "label-filter", os.Getenv(EnvLabelFilter), "build only what the specs this Ginkgo label filter selects need (default: "+EnvLabelFilter+"); with no filter, focus or skip, every step is built")
	fs.StringVar(&o.focus, "focus", os.Getenv(EnvFocus), "as --label-filter, with a Ginkgo focus (default: "+EnvFocus+")")
	fs.StringVar(&f.skip, "skip", os.Getenv(EnvSkip), "as --label-filter, with Ginkgo skips, space separated (default: "+EnvSkip+")")
	fs.BoolVar(&o.useExistingCluster, "use-existing-cluster", false, "the run uses an existing management cluster (-e2e.use-existing-cluster): its node image and controllers are not needed")
	fs.StringVar(&o.selectionFile, "selection", "", "a selection the suite wrote with -e2e.selection, instead of compiling the suite")
	fs.StringVar(&o.selectionOut, "selection-out", "", "also write the suite's selection (JSON) to this file")
}

// options checks the parsed flags.
func (f *flags) options(fs *pflag.FlagSet) (options, error) {
	o := f.o
	if f.envErr != nil && !fs.Changed("jobs") {
		return o, f.envErr
	}
	if o.jobs < 1 {
		return o, fmt.Errorf("--jobs %d: want 1 or more", o.jobs)
	}
	o.skip = strings.Fields(f.skip)
	o.suiteSet = f.suiteEnv || fs.Changed("suite")
	o.copyFromSet = f.copyFromEnv || fs.Changed("copy-from")
	o.only, o.rebuild = trimList(f.only), trimList(f.rebuild)
	return o, nil
}

// defaultDockerHost is where a Docker engine beside Podman answers.
const defaultDockerHost = "unix:///var/run/docker.sock"

// copySource connects to the engine images are copied from, or returns
// nil for none: the one -copy-from names (a failure to reach it is an
// error); without -copy-from, on Podman's service, a Docker engine at
// defaultDockerHost when one answers, so that a machine that built the
// images for Docker does not build them again for Podman.
func copySource(o options, rt *moby.Runtime) (*moby.Runtime, error) {
	if o.copyFromSet {
		if o.copyFrom == "" {
			return nil, nil
		}
		if o.copyFrom == rt.Endpoint() {
			return nil, fmt.Errorf("--copy-from %s: that is the engine the images are for (DOCKER_HOST); name the other one", o.copyFrom)
		}
		src, err := moby.New(moby.Config{Host: o.copyFrom})
		if err != nil {
			return nil, fmt.Errorf("--copy-from: %w", err)
		}
		return src, nil
	}
	if !rt.IsPodman() || rt.Endpoint() == defaultDockerHost {
		return nil, nil
	}
	src, err := moby.New(moby.Config{Host: defaultDockerHost, ConnectTimeout: 10 * time.Second})
	if err != nil {
		return nil, nil // no Docker here: build into Podman
	}
	if src.IsPodman() {
		_ = src.Close() // a client connection, unused
		return nil, nil
	}
	return src, nil
}

// trimList drops the blanks of a comma-separated flag's values.
func trimList(l []string) []string {
	var out []string
	for _, f := range l {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// builderFiles returns the repository files whose content shapes the
// images of each kind, as each builder's package declares them: changing
// them rebuilds those images.
func builderFiles() map[plan.Kind][]string {
	m := map[plan.Kind][]string{
		plan.KindCertManagerSubstitute: cmimage.Files,
		plan.KindRootfs:                debian.Files,
		plan.KindKindBase:              kindbase.Files,
		plan.KindNode:                  nodeimage.NodeFiles,
		plan.KindHAProxy:               nodeimage.HAProxyFiles,
	}
	for _, k := range goimages.Kinds {
		m[k] = goimages.Files
	}
	return m
}

func run(ctx context.Context, o options, stdout io.Writer) error {
	start := time.Now()
	cfg, err := config.Load(o.config)
	if err != nil {
		return err
	}
	build, err := buildspec.Load(cfg)
	if err != nil {
		return err
	}
	// The go commands this process runs (the suite's compile, the
	// builders') inherit its environment.
	if _, set := os.LookupEnv("GOGC"); !set {
		if err := os.Setenv("GOGC", buildGOGC); err != nil {
			return err
		}
	}
	// The builders' own files are the harness's, wherever the config is
	// (a provider's config lives in the provider's repository).
	repoRoot := cfg.HarnessDir()
	cacheDir, err := gomod.CacheDir()
	if err != nil {
		return err
	}
	// One go command compiles at a time, whichever builder runs it.
	slots := gobuild.NewSlots(1)
	gob := &gobuild.Builder{CacheDir: cacheDir, Slots: slots}
	t0 := time.Now()
	full, err := plan.New(build, plan.Options{RepoRoot: repoRoot, Files: builderFiles(), SourceHashes: sourceHashes(ctx, gob)})
	if err != nil {
		return err
	}
	if cfg.Build.ClusterAPI.Source != "" || len(build.GoImages) > 0 {
		fmt.Fprintf(stdout, "plan: local sources hashed in %s\n", time.Since(t0).Round(100*time.Millisecond))
	}
	p, targets := full, o.only
	var who map[string][]string // per step, the specs that need it
	if len(o.only) > 0 {
		if p, err = subPlan(full, o.only, repoRoot); err != nil {
			return err
		}
	} else {
		sel, ok, err := o.selection(ctx, cfg, stdout)
		if err != nil {
			return err
		}
		if ok {
			who = neededBy(full, sel)
			if p, targets, err = selectedPlan(full, sel, o, repoRoot, stdout); err != nil {
				return err
			}
		}
	}

	rt, err := moby.New(moby.Config{})
	if err != nil {
		return err
	}
	defer rt.Close()
	// Builders' detailed output (go, debootstrap, helper containers) only
	// with -v; failures carry the end of it either way.
	var logw io.Writer
	if o.verbose {
		gob.Output = stdout
		logw = stdout
	}
	goImages := &goimages.Builders{Images: rt, Go: gob}
	runID := runtime.NewRunID()
	builders := map[plan.Kind]plan.Builder{
		plan.KindRootfs:                &debian.RootfsBuilder{Images: rt, Log: logw},
		plan.KindKindBase:              &kindbase.Builder{Runtime: rt, Go: gob, RunID: runID, Log: logw},
		plan.KindNode:                  &nodeimage.Builder{Runtime: rt, Kube: goImages, KubeRouter: cfg.Build.KubeRouter, RunID: runID, Log: logw},
		plan.KindHAProxy:               &nodeimage.HAProxyBuilder{Images: rt},
		plan.KindCertManagerSubstitute: &cmimage.Builder{Images: rt, RepoRoot: repoRoot, Slots: slots},
	}
	goImages.Register(builders)

	if o.list {
		return list(ctx, full, p, who, rt, builders, o.rebuild, cfg.Build.Registry, stdout)
	}
	if err := sayMissing(ctx, p, targets, who, rt, o.rebuild, stdout); err != nil {
		return err
	}

	p, unbuildable, err := withoutUnbuildable(ctx, p, rt, builders, o.rebuild, repoRoot)
	if err != nil {
		return err
	}
	var errs []error
	reg := cfg.Build.Registry
	opts := plan.RunOptions{
		Images: rt, Builders: builders, Progress: stdout, Rebuild: o.rebuild, Targets: targets,
		Puller: &images.Puller{Images: rt, Mirror: reg.Mirror},
		Policy: func(s plan.Step) string { return reg.PolicyFor(s.ID, s.Published) },
		Jobs:   o.jobs, MemoryBudget: memoryBudget(), Cost: plan.DefaultCost, Exclusive: goimages.SharedBuild,
	}
	if reg.Publish != "" {
		opts.Publisher = &registry.Publisher{Images: rt, Registry: reg.Publish}
	}
	src, err := copySource(o, rt)
	if err != nil {
		return err
	}
	if src != nil {
		defer src.Close()
		opts.Copier = &plan.EngineCopier{From: src, To: rt, FromName: src.Endpoint()}
		fmt.Fprintf(stdout, "images: copying from %s what it holds current\n", src.Endpoint())
	}
	fmt.Fprintf(stdout, "images: policy %s, mirror %q, publish %q\n", reg.Policy, reg.Mirror, reg.Publish)
	// The suite renders the built-in providers' components with kustomize:
	// build it now, so that the first suite run does not, beside the plan
	// and in its compile slot. It takes the slot while the plan's first
	// steps download their modules, so on a cold machine it costs no wall
	// time; when it is installed, it takes none.
	kustomize := make(chan error, 1)
	var kustomizeTook time.Duration
	go func() {
		kustomize <- slots.Hold(ctx, func() error {
			t1 := time.Now()
			_, err := repository.Kustomize(ctx, cfg.Build.Kustomize)
			kustomizeTook = time.Since(t1)
			return err
		})
	}()
	if err := plan.Run(ctx, p, opts); err != nil {
		errs = append(errs, err)
	}
	if len(unbuildable) > 0 {
		errs = append(errs, fmt.Errorf("no builder yet for: %s", strings.Join(unbuildable, ", ")))
	}
	if err := <-kustomize; err != nil {
		errs = append(errs, err)
	} else {
		fmt.Fprintf(stdout, "kustomize %s ready in %s\n", cfg.Build.Kustomize.Version, kustomizeTook.Round(100*time.Millisecond))
	}
	if o.renderDir != "" {
		if err := renderAll(ctx, cfg, o.renderDir, stdout); err != nil {
			errs = append(errs, err)
		}
	}
	self, children := cputime.Self()
	fmt.Fprintf(stdout, "total: %s (cpu: this process %s, the commands it ran %s)\n", time.Since(start).Round(100*time.Millisecond),
		self.Round(100*time.Millisecond), children.Round(100*time.Millisecond))
	return errors.Join(errs...)
}

// memoryBudget is three quarters of the memory available now (MemAvailable
// in /proc/meminfo), leaving the rest to the engine and the page cache; 0
// (no budget) where that cannot be read.

// buildGOGC is the GOGC of the go commands (and so of the compilers and
// linkers) the builders run, unless GOGC is set: their garbage collector runs
// a quarter as often, for more memory. Two cold etcd builds took 0.89 times
// the wall time and 0.90 times the CPU of GOGC's default (100)
// (make bench-gobuild); the memory costs of plan.DefaultCost allow for
// it.
const buildGOGC = "400"

func memoryBudget() int64 {
	n, err := hoststat.MemAvailable()
	if err != nil {
		return 0
	}
	return n / 4 * 3
}

// renderAll writes the components YAML and the CNI manifest into dir.
func renderAll(ctx context.Context, cfg *config.Config, dir string, out io.Writer) error {
	t0 := time.Now()
	var errs []error
	files, err := repository.Components(ctx, cfg, filepath.Join(dir, "components"))
	if err != nil {
		errs = append(errs, err)
	}
	manifest := filepath.Join(dir, "cni", "kube-router.yaml")
	if err := cni.WriteKubeRouterManifest(ctx, cfg, manifest); err != nil {
		errs = append(errs, err)
	} else {
		files = append(files, manifest)
	}
	for _, f := range files {
		fmt.Fprintf(out, "rendered %s\n", f)
	}
	fmt.Fprintf(out, "render: %d files in %s\n", len(files), time.Since(t0).Round(100*time.Millisecond))
	return errors.Join(errs...)
}

// list prints each step of full, its image, its source policy, whether
// its image is current (or, when the selection leaves it out of sel, that
// it is not needed) and, when the suite said, who needs it; it pulls and
// builds nothing.
func list(ctx context.Context, full, sel *plan.Plan, who map[string][]string, rt plan.ImageInspector, builders map[plan.Kind]plan.Builder, rebuild []string, reg config.Registry, out io.Writer) error {
	ds, err := full.Decide(ctx, rt, rebuild...)
	if err != nil {
		return err
	}
	for _, d := range ds {
		what := "up to date"
		if d.Build {
			what = "not current: " + d.Reason
		}
		if _, ok := sel.Step(d.Step.ID); !ok {
			what = "not needed by the selected specs"
		}
		if builders[d.Step.Kind] == nil {
			what += " [no builder yet]"
		}
		role := "-"
		if d.Step.Target {
			role = "target"
		}
		needed := "-"
		if who != nil {
			needed = strings.Join(who[d.Step.ID], ",")
			if needed == "" {
				needed = "(no spec)"
			}
		}
		fmt.Fprintf(out, "%-40s %-16s %-72s %-6s %-15s %-40s %s\n", d.Step.ID, d.Step.Kind, d.Step.Image, role, reg.PolicyFor(d.Step.ID, d.Step.Published), needed, what)
	}
	return nil
}

// sourceHashes adapts gobuild's SourceHashes to the plan.
func sourceHashes(ctx context.Context, gob *gobuild.Builder) func(dir string, pkgs, tags []string) (map[string]plan.SourceInfo, error) {
	return func(dir string, pkgs, tags []string) (map[string]plan.SourceInfo, error) {
		h, err := gob.SourceHashes(ctx, gobuild.LocalTarget{Dir: dir, Packages: pkgs, Tags: tags})
		if err != nil {
			return nil, err
		}
		out := make(map[string]plan.SourceInfo, len(h))
		for k, v := range h {
			out[k] = plan.SourceInfo{ImportPath: v.ImportPath, Hash: v.Hash}
		}
		return out, nil
	}
}

// withoutUnbuildable drops the steps that must be built but have no
// builder, and the steps depending on them, and names them; plan.Run
// refuses a plan with such steps.
func withoutUnbuildable(ctx context.Context, p *plan.Plan, rt plan.ImageInspector, builders map[plan.Kind]plan.Builder, rebuild []string, repoRoot string) (*plan.Plan, []string, error) {
	ds, err := p.Decide(ctx, rt, rebuild...)
	if err != nil {
		return nil, nil, err
	}
	dropped := map[string]bool{}
	var names []string
	var keep []plan.Step
	for _, d := range ds { // dependencies first
		s := d.Step
		bad := d.Build && builders[s.Kind] == nil
		if !bad {
			bad = slices.ContainsFunc(s.Deps, func(dep string) bool { return dropped[dep] })
		}
		if bad {
			dropped[s.ID] = true
			names = append(names, s.ID)
			continue
		}
		keep = append(keep, s)
	}
	if len(names) == 0 {
		return p, nil, nil
	}
	sub, err := plan.FromSteps(keep, plan.Options{RepoRoot: repoRoot})
	return sub, names, err
}

// subPlan keeps the steps in ids and everything they depend on. The steps
// keep their hashes: their inputs, files and dependencies are unchanged.
func subPlan(p *plan.Plan, ids []string, repoRoot string) (*plan.Plan, error) {
	want := map[string]bool{}
	var add func(id string) error
	add = func(id string) error {
		if want[id] {
			return nil
		}
		s, ok := p.Step(id)
		if !ok {
			return fmt.Errorf("--only %s: no such step (see --list)", id)
		}
		want[id] = true
		for _, d := range s.Deps {
			if err := add(d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, id := range ids {
		if err := add(id); err != nil {
			return nil, err
		}
	}
	var steps []plan.Step
	for _, s := range p.Steps() {
		if want[s.ID] {
			steps = append(steps, s)
		}
	}
	return plan.FromSteps(steps, plan.Options{RepoRoot: repoRoot})
}
