package suite

import (
	"maps"
	"slices"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/suite/selection"
)

// dropUnneeded removes from cfg what costs setup time but no spec of reqs
// needs: build.clusterAPI.previous (a clusterctl build and a rendering)
// unless a spec upgrades from it, and the test runtime extension (a fifth
// provider for clusterctl init to wait for) unless a spec drives it. It
// returns a line for each thing it dropped.
func dropUnneeded(cfg *config.Config, reqs []Requirement) []string {
	var out []string
	if cfg.Build.ClusterAPI.Previous != nil && !slices.ContainsFunc(reqs, func(r Requirement) bool { return r.PreviousRelease }) {
		cfg.Build.ClusterAPI.Previous = nil
		out = append(out, "no selected spec upgrades from build.clusterAPI.previous: its clusterctl and components not prepared")
	}
	if cfg.Build.ClusterAPI.Images.TestExtension != "" && !slices.ContainsFunc(reqs, func(r Requirement) bool { return r.TestExtension }) {
		cfg.Build.ClusterAPI.Images.TestExtension = ""
		out = append(out, "no selected spec needs the test runtime extension: not installed")
	}
	return out
}

// imagesNeeded returns the images a run of the specs of reqs needs in the
// engine, each with who needs it: what CAPD runs on the host (the load
// balancer, the node image of every Kubernetes version a spec uses, and
// for a spec that runs conformance, the conformance image and the e2e
// test images CAPD preloads into the machines) and,
// with management (setup creates the kind cluster), the management
// cluster's node image and images. A spec that upgrades from
// build.clusterAPI.previous creates a further kind management cluster that
// runs the previous release's controllers, then the current ones. Call it
// after dropUnneeded, whose changes it reflects. Setup checks the engine
// for these images; the suite's -e2e.selection mode lists them for
// `make images`.
func imagesNeeded(cfg *config.Config, reqs []Requirement, management bool) []selection.Image {
	need := map[string][]string{}
	add := func(ref, who string) {
		if ref != "" && !slices.Contains(need[ref], who) {
			need[ref] = append(need[ref], who)
		}
	}
	nodeImage := func(variable string) string {
		v, _ := cfg.LookupVariable(variable)
		if k, err := cfg.Build.KubernetesVersion(v); err == nil {
			return k.NodeImage
		}
		return ""
	}
	// What dropUnneeded left is needed by the specs that say so or, when
	// none does (a suite without Requirements), by setup.
	testExtension := cfg.Build.ClusterAPI.Images.TestExtension
	extensionBySpec := slices.ContainsFunc(reqs, func(r Requirement) bool { return r.TestExtension })
	managementImages := func(who string, withExtension bool) {
		add(nodeImage(config.VarKubernetesVersionManagement), who)
		for _, img := range cfg.ManagementImages() {
			if img.Name == testExtension && !withExtension {
				continue
			}
			add(img.Name, who)
		}
	}
	if management {
		managementImages(selection.SuiteSetup, !extensionBySpec)
	}
	if !slices.ContainsFunc(reqs, func(r Requirement) bool { return r.PreviousRelease }) && len(cfg.PreviousProviders()) > 0 {
		managementImages(selection.SuiteSetup, !extensionBySpec)
		for _, b := range cfg.PreviousProviders() {
			add(b.Image, selection.SuiteSetup)
		}
	}
	for _, r := range reqs {
		if !r.InMemory {
			add(cfg.Build.LoadBalancer.Image, r.Spec)
		}
		for _, v := range r.KubernetesVersions {
			add(nodeImage(v), r.Spec)
		}
		for _, name := range r.Conformance {
			v, _ := cfg.LookupVariable(name)
			if k, err := cfg.Build.KubernetesVersion(v); err == nil {
				add(k.ConformanceImage(), r.Spec)
				for _, ref := range k.TestImageRefs() {
					add(ref, r.Spec)
				}
			}
		}
		if r.TestExtension {
			add(testExtension, r.Spec)
		}
		if r.PreviousRelease {
			managementImages(r.Spec, r.TestExtension)
			for _, b := range cfg.PreviousProviders() {
				add(b.Image, r.Spec)
			}
		}
	}
	if len(reqs) == 0 {
		add(cfg.Build.LoadBalancer.Image, selection.SuiteSetup)
	}
	out := make([]selection.Image, 0, len(need))
	for _, ref := range slices.Sorted(maps.Keys(need)) {
		out = append(out, selection.Image{Ref: ref, NeededBy: need[ref]})
	}
	return out
}

// imageRefs returns the references of imgs.
func imageRefs(imgs []selection.Image) []string {
	return selection.Selection{Images: imgs}.Refs()
}
