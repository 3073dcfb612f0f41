package goimages_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// The Cluster API managers of the release the suite links and the cloud
// controller manager are compiled as the suite is (plan.InputHarness), so
// that the go command compiles the packages they share with it once. That
// holds only while their builds select the same version of every module
// they share with the suite: one module a patch apart (golang.org/x/net,
// say) changes the build of every package above it, and a cold make
// test-e2e compiles client-go, controller-runtime and the rest twice.
// This test fails when a go.mod change (a `go get` that raises a shared
// module in one of them) breaks that, naming the module.
func TestHarnessBuildsShareTheSuitesModuleVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	suite := moduleVersions(t, ctx, root, "list", "-deps", "-test", "-tags", "e2e", "./e2e")

	// Cluster API's test module as gobuild builds a release: in a module of
	// its own that requires it, its sibling modules at the same version.
	capi := strings.TrimSpace(run(t, ctx, root, "go", "list", "-m", "-f", "{{.Version}}", config.ClusterAPITestModule))
	wrapper := t.TempDir()
	goMod := fmt.Sprintf("module sharecheck\n\ngo 1.26.0\n\nrequire %s %s\n\nreplace (\n\t%s => %s %s\n\t%s/api => %s/api %s\n)\n",
		config.ClusterAPITestModule, capi, config.ClusterAPIModule, config.ClusterAPIModule, capi, config.ClusterAPIModule, config.ClusterAPIModule, capi)
	if err := os.WriteFile(filepath.Join(wrapper, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{config.ClusterAPITestModule + "/infrastructure/docker", config.ClusterAPITestModule + "/extension"} {
		compare(t, "the suite", suite, pkg+"@"+capi, moduleVersions(t, ctx, wrapper, "list", "-mod=mod", "-deps", pkg))
	}
	compare(t, "the suite", suite, "the cloud controller manager",
		moduleVersions(t, ctx, filepath.Join(root, "cloudprovider"), "list", "-deps", config.CloudControllerManagerPackage))
}

// moduleVersions runs go with args in dir and returns the version of the
// module of every non-standard package listed (the main module has none).
func moduleVersions(t *testing.T, ctx context.Context, dir string, args ...string) map[string]string {
	t.Helper()
	args = append(args[:1:1], append([]string{"-f", "{{if not .Standard}}{{with .Module}}{{.Path}} {{.Version}}{{end}}{{end}}"}, args[1:]...)...)
	out := run(t, ctx, dir, "go", args...)
	mods := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			mods[f[0]] = f[1]
		}
	}
	if len(mods) < 20 {
		t.Fatalf("go %s in %s listed %d modules: %q", strings.Join(args, " "), dir, len(mods), out)
	}
	return mods
}

func compare(t *testing.T, aName string, a map[string]string, bName string, b map[string]string) {
	t.Helper()
	shared := 0
	for m, va := range a {
		vb, ok := b[m]
		if !ok {
			continue
		}
		shared++
		if va != vb {
			t.Errorf("%s: %s builds it at %s, %s at %s: make them require one version, or the go command compiles it and every package above it twice", m, aName, va, bName, vb)
		}
	}
	t.Logf("%s and %s share %d modules", aName, bName, shared)
}

func run(t *testing.T, ctx context.Context, dir, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, stderr.String())
	}
	return stdout.String()
}
