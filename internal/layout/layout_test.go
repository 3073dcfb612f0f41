package layout

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

const module = "github.com/capd-e2e/capd-e2e"

// deps returns, for each package matching patterns, the packages it
// imports directly or indirectly (tests excluded), as `go list -deps`
// reports them, run in dir with build tags.
func deps(t *testing.T, dir string, tags string, patterns ...string) map[string][]string {
	t.Helper()
	args := []string{"list", "-tags", tags, "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v: %s", strings.Join(patterns, " "), err, stderr.String())
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		m[f[0]] = f[1:]
	}
	if len(m) == 0 {
		t.Fatalf("go list %s listed nothing", strings.Join(patterns, " "))
	}
	return m
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestProviderFacingPackagesDoNotImportTheFactory(t *testing.T) {
	for pkg, ds := range deps(t, repoRoot(t), "e2e", "./framework/...", "./e2e/...") {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/factory/") {
				t.Errorf("%s imports %s: what a provider imports must not pull in the image factory", pkg, d)
			}
		}
	}
}

func TestFrameworkDoesNotImportTheSpecs(t *testing.T) {
	for pkg, ds := range deps(t, repoRoot(t), "e2e", "./framework/...") {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/e2e") {
				t.Errorf("%s imports %s: the specs sit above the framework, never below it", pkg, d)
			}
		}
	}
}

func TestCloudProviderDependsOnTheRuntimeAlone(t *testing.T) {
	path := filepath.Join(repoRoot(t), "cloudprovider", "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{module + "/framework/runtime": true, module + "/cloudprovider/names": true}
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, module) && !allowed[r.Mod.Path] {
			t.Errorf("cloudprovider/go.mod requires %s: the cloud provider may depend on the runtime module (and its names) alone", r.Mod.Path)
		}
	}
	for _, r := range f.Replace {
		if strings.HasPrefix(r.Old.Path, "sigs.k8s.io/cluster-api") {
			t.Errorf("cloudprovider/go.mod replaces %s: it should need nothing of Cluster API", r.Old.Path)
		}
	}
	// And its packages, as built: none of the harness's root module.
	for pkg, ds := range deps(t, filepath.Join(repoRoot(t), "cloudprovider"), "", "./...") {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/") && !strings.HasPrefix(d, module+"/framework/runtime") && !strings.HasPrefix(d, module+"/cloudprovider") {
				t.Errorf("%s imports %s", pkg, d)
			}
		}
	}
}

// TestOneCommandLine: the harness's tools are subcommands of one binary,
// cmd/capd-e2e (internal/cli); the other commands run in containers (the
// cert-manager substitute, the cloud-controller-manager).
func TestOneCommandLine(t *testing.T) {
	want := map[string]bool{module + "/cmd/capd-e2e": true, module + "/cmd/cert-manager-substitute": true}
	cmd := exec.Command("go", "list", "-tags", "e2e,images", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./...")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := strings.Fields(string(out))
	for _, c := range got {
		if !want[c] {
			t.Errorf("command %s: make it a subcommand of capd-e2e (internal/cli)", c)
		}
	}
	if len(got) != len(want) {
		t.Errorf("commands %q; want %d", got, len(want))
	}
}

// TestKeptDependsOnTheStandardLibraryAlone: the kept environment's
// description is read by the command line and by a provider's tools, and
// written by the suite; it must pull in nothing.
func TestKeptDependsOnTheStandardLibraryAlone(t *testing.T) {
	for pkg, ds := range deps(t, repoRoot(t), "", "./framework/kept") {
		for _, d := range ds {
			if strings.Contains(strings.SplitN(d, "/", 2)[0], ".") {
				t.Errorf("%s imports %s: framework/kept is standard library only", pkg, d)
			}
		}
	}
}

// declared returns the exported names declared at the top level of the
// package in dir (tests excluded).
func declared(t *testing.T, dir string) map[string]bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for name, obj := range f.Scope.Objects {
				if ast.IsExported(name) && obj.Kind != ast.Bad {
					out[name] = true
				}
			}
		}
	}
	return out
}

// TestProviderConfigHoldsNoFactoryModel: how images are built (Debian,
// kind's base image, the container runtime, preloads, Go images) is
// declared in factory/buildspec only; framework/config, which every
// provider's suite imports, declares none of it. The types the factory
// extends (it embeds the run's view of them) are the only shared names.
func TestProviderConfigHoldsNoFactoryModel(t *testing.T) {
	root := repoRoot(t)
	factory := declared(t, filepath.Join(root, "factory", "buildspec"))
	run := declared(t, filepath.Join(root, "framework", "config"))
	extends := map[string]bool{"Build": true, "Kubernetes": true, "KubeRouter": true, "LoadBalancer": true,
		"ComponentImage": true, "Conformance": true, "Load": true}
	for _, name := range []string{"Debian", "Rootfs", "Kind", "ContainerRuntime", "Preload", "GoImage"} {
		if !factory[name] {
			t.Errorf("factory/buildspec declares no %s: update this test", name)
		}
	}
	for name := range factory {
		if run[name] && !extends[name] {
			t.Errorf("framework/config declares %s, which is the image factory's (factory/buildspec)", name)
		}
	}
}
