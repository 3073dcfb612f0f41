//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// grace is how long a side's supervised run gets to clean up after
// SIGTERM when the benchmark's deadline passes (capd-e2e run's own
// GRACE_PERIOD default).
const grace = 10 * time.Minute

// repoRoot is the repository's top folder (go test runs in bench/).
func repoRoot(b *testing.B) string {
	b.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	return root
}

// outDir is $ARTIFACTS/bench-<name> (ARTIFACTS defaults to _artifacts),
// emptied.
func outDir(b *testing.B, name string) string {
	b.Helper()
	base := os.Getenv("ARTIFACTS")
	if base == "" {
		base = filepath.Join(repoRoot(b), "_artifacts")
	}
	dir := filepath.Join(base, "bench-"+name)
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// envInt reads a positive count from the environment.
func envInt(b *testing.B, key string, def int) int {
	b.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive count", key, v)
	}
	return n
}

// envBool reads a boolean from the environment (strconv.ParseBool's
// grammar, as every switch of the harness).
func envBool(b *testing.B, key string, def bool) bool {
	b.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	t, err := strconv.ParseBool(v)
	if err != nil {
		b.Fatalf("%s=%q: want true or false", key, v)
	}
	return t
}

// envOr returns the variable, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// writeResults writes dir/results.md and prints it.
func writeResults(b *testing.B, dir, text string) {
	b.Helper()
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Print("\n" + text)
}

// run runs a command to its end, its output into the test's log.
func run(b *testing.B, dir string, env []string, args ...string) {
	b.Helper()
	runCtx(b, b.Context(), dir, env, args...)
}

// cleanupCtx is a context for a Cleanup function, which runs after
// b.Context() has ended.
func cleanupCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	b.Cleanup(cancel) // registered before the cleanup using ctx: runs after it
	return ctx
}

// runCtx is run within ctx.
func runCtx(b *testing.B, ctx context.Context, dir string, env []string, args ...string) {
	b.Helper()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// capdE2E compiles the harness's command line as scripts/capd-e2e.sh does
// and returns its path.
func capdE2E(b *testing.B) string {
	b.Helper()
	root := repoRoot(b)
	bin := filepath.Join(root, "hack/tools/bin/capd-e2e")
	run(b, root, []string{"GOGC=400", "CGO_ENABLED=0"}, "go", "build", "-gcflags=all=-dwarf=false", "-o", bin, "./cmd/capd-e2e")
	return bin
}

// prepareHost installs the machine's packages and checks the engine, as
// the first steps of scripts/ci-e2e.sh.
func prepareHost(b *testing.B) {
	b.Helper()
	root := repoRoot(b)
	run(b, root, nil, "scripts/install-deps.sh")
	run(b, root, nil, capdE2E(b), "engine", "ensure", "--privileged-nesting")
}

func newRuntime(b *testing.B) *moby.Runtime {
	b.Helper()
	rt, err := moby.New(moby.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// clearPlanImages removes every image the image factory built (its
// inputs-hash label) from the engine, so that a side starts as on a fresh
// machine. A base image goes once the images built on it are gone: a few
// rounds. It fails when one is left.
func clearPlanImages(b *testing.B, rt runtime.Runtime) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	var left []string
	for range 5 {
		imgs, err := rt.ListImages(ctx)
		if err != nil {
			b.Fatal(err)
		}
		left = left[:0]
		for _, img := range imgs {
			if img.Labels[plan.LabelInputsHash] == "" {
				continue
			}
			left = append(left, fmt.Sprintf("%s %v", img.ID, img.RepoTags))
			if err := rt.RemoveImage(ctx, img.ID); err != nil {
				b.Logf("remove %s: %v (another round may)", img.ID, err)
			}
		}
		if len(left) == 0 {
			return
		}
	}
	b.Fatalf("images of the plan still in the engine after 5 rounds:\n%s", strings.Join(left, "\n"))
}

// emptyCaches returns the environment of a cold side: a Go module cache,
// Go build cache and harness cache of its own under dir, emptied.
func emptyCaches(b *testing.B, dir string) []string {
	b.Helper()
	removeAll(b, dir)
	env := []string{"GOMODCACHE=" + dir + "/gomod", "GOCACHE=" + dir + "/gobuild", "CAPD_E2E_CACHE=" + dir + "/capd-e2e"}
	for _, kv := range env {
		if err := os.MkdirAll(kv[strings.IndexByte(kv, '=')+1:], 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return env
}

// removeAll removes dir, the module cache's read-only files included.
func removeAll(b *testing.B, dir string) {
	b.Helper()
	if _, err := os.Stat(dir); err != nil {
		return
	}
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
}
