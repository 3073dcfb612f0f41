package gobuild

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// wrapperModulePath is the module path of every wrapper module. It is never
// published; the ".local" suffix keeps it out of any proxy lookup.
const wrapperModulePath = "capd-e2e.local/gobuild"

// sourceModule is a module the wrapper requires, with its own go.mod.
type sourceModule struct {
	// Mod is the module path and version.
	Mod module.Version
	// GoMod is the content of the module's go.mod.
	GoMod []byte
}

// wrapperGoMod writes the go.mod of a wrapper module that requires mods
// (the first is the primary one, whose godebug lines are kept) and carries
// the replace directives a build of their packages needs:
//
//   - A replace of a required module by a local directory (k8s.io/kubernetes'
//     ./staging/src/k8s.io/api, etcd's ../api) only works inside that
//     module's repository. It becomes a replace by the same module at
//     localVersion(path, version of the module that declared it), which is a
//     published release. Local replaces of modules the go.mod does not
//     require (etcd's FORBIDDEN_DEPENDENCY guards) are dropped: nothing
//     resolves them.
//   - Other replaces are copied: the go command honours replace directives
//     of the main module only, so without them the build would use other
//     versions than the project's own build does.
//   - extra replaces (module path to version) come last and win.
//
// The go directive is the highest of the modules' (a dependency may not
// need a newer Go than the main module); toolchain lines are dropped, as the
// build runs with GOTOOLCHAIN=local.
func wrapperGoMod(mods []sourceModule, localVersion func(path, version string) string, extra map[string]string) ([]byte, error) {
	if len(mods) == 0 {
		return nil, fmt.Errorf("wrapper module: no module to require")
	}
	if localVersion == nil {
		localVersion = func(_, version string) string { return version }
	}
	f := &modfile.File{}
	if err := f.AddModuleStmt(wrapperModulePath); err != nil {
		return nil, err
	}
	goVersion := ""
	type repl struct{ path, newPath, newVersion, from string }
	var repls []repl
	replaced := map[string]int{}
	addRepl := func(r repl) error {
		if i, ok := replaced[r.path]; ok {
			old := repls[i]
			if old.newPath != r.newPath || old.newVersion != r.newVersion {
				return fmt.Errorf("wrapper module: %s and %s replace %s differently (%s %s, %s %s)",
					old.from, r.from, r.path, old.newPath, old.newVersion, r.newPath, r.newVersion)
			}
			return nil
		}
		replaced[r.path] = len(repls)
		repls = append(repls, r)
		return nil
	}
	for i, m := range mods {
		mf, err := modfile.Parse(m.Mod.String()+"/go.mod", m.GoMod, nil)
		if err != nil {
			return nil, fmt.Errorf("wrapper module: parse go.mod of %s: %w", m.Mod, err)
		}
		if mf.Go != nil && (goVersion == "" || goVersionLess(goVersion, mf.Go.Version)) {
			goVersion = mf.Go.Version
		}
		if i == 0 {
			for _, d := range mf.Godebug {
				if err := f.AddGodebug(d.Key, d.Value); err != nil {
					return nil, err
				}
			}
		}
		required := map[string]bool{}
		for _, r := range mf.Require {
			required[r.Mod.Path] = true
		}
		from := m.Mod.String()
		for _, r := range mf.Replace {
			if r.Old.Version != "" {
				// A replace of one version only: copy as is.
				if err := f.AddReplace(r.Old.Path, r.Old.Version, r.New.Path, r.New.Version); err != nil {
					return nil, err
				}
				continue
			}
			if modfile.IsDirectoryPath(r.New.Path) {
				if !required[r.Old.Path] || slices.ContainsFunc(mods, func(o sourceModule) bool { return o.Mod.Path == r.Old.Path }) {
					continue
				}
				if err := addRepl(repl{r.Old.Path, r.Old.Path, localVersion(r.Old.Path, m.Mod.Version), from}); err != nil {
					return nil, err
				}
				continue
			}
			if err := addRepl(repl{r.Old.Path, r.New.Path, r.New.Version, from}); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(extra)) {
		r := repl{p, p, extra[p], "the build target"}
		if i, ok := replaced[p]; ok {
			repls[i] = r
			continue
		}
		replaced[p] = len(repls)
		repls = append(repls, r)
	}
	if goVersion != "" {
		if err := f.AddGoStmt(goVersion); err != nil {
			return nil, err
		}
	}
	for _, m := range mods {
		f.AddNewRequire(m.Mod.Path, m.Mod.Version, false)
	}
	slices.SortFunc(repls, func(a, b repl) int { return strings.Compare(a.path, b.path) })
	for _, r := range repls {
		if err := f.AddReplace(r.path, "", r.newPath, r.newVersion); err != nil {
			return nil, err
		}
	}
	f.SetRequireSeparateIndirect(f.Require)
	f.Cleanup()
	return f.Format()
}

// goVersionLess compares two go directive versions ("1.24", "1.26.0").
func goVersionLess(a, b string) bool {
	return semver.Compare("v"+a, "v"+b) < 0
}

// KubernetesStagingVersion maps a k8s.io/kubernetes version to the version
// of its staging modules (k8s.io/api, k8s.io/client-go, ...): v1.36.3 ->
// v0.36.3. It is the localVersion of a Kubernetes Target.
func KubernetesStagingVersion(_, kubernetesVersion string) string {
	if strings.HasPrefix(kubernetesVersion, "v1.") {
		return "v0." + strings.TrimPrefix(kubernetesVersion, "v1.")
	}
	return kubernetesVersion
}
