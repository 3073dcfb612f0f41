package config

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// Checks of the run's part of the build section: the images a run uses and
// the releases behind them. The factory's part (how each image is built,
// and that no two steps build one image from different inputs) is checked
// by factory/buildspec.

func (b *Build) validate(e *Errors) {
	// Kubernetes versions.
	if len(b.Kubernetes) == 0 {
		e.Add("build.kubernetes", "at least one Kubernetes version is required")
	}
	versions := map[string]int{}
	for i, k := range b.Kubernetes {
		f := fmt.Sprintf("build.kubernetes[%d]", i)
		e.Version(f+".version", k.Version)
		if j, dup := versions[k.Version]; dup && k.Version != "" {
			e.Add(f+".version", "%s is also build.kubernetes[%d]", k.Version, j)
		}
		versions[k.Version] = i
		e.Ref(f+".nodeImage", k.NodeImage)
		e.Required(f+".imageRepository", k.ImageRepository)
		e.Ref(f+".etcd.image", k.Etcd.Image)
		e.Ref(f+".coreDNS.image", k.CoreDNS.Image)
		e.Ref(f+".pause.image", k.Pause.Image)
		if c := k.Conformance; c != nil {
			e.Ref(f+".conformance.image", c.Image)
			if len(c.TestImages) == 0 {
				e.Add(f+".conformance.testImages", "at least one is required")
			}
			for n, img := range c.TestImages {
				if _, tag, ok := strings.Cut(img, ":"); !ok || tag == "" || strings.ContainsAny(tag, ":/@") {
					e.Add(fmt.Sprintf("%s.conformance.testImages[%d]", f, n), "%q is not <name>:<tag>", img)
				}
			}
		}
	}

	// Other images.
	e.Ref("build.loadBalancer.image", b.LoadBalancer.Image)
	e.Version("build.kubeRouter.version", b.KubeRouter.Version)
	e.Ref("build.kubeRouter.image", b.KubeRouter.Image)
	e.Version("build.clusterAPI.version", b.ClusterAPI.Version)
	e.Ref("build.clusterAPI.images.core", b.ClusterAPI.Images.Core)
	e.Ref("build.clusterAPI.images.kubeadmBootstrap", b.ClusterAPI.Images.KubeadmBootstrap)
	e.Ref("build.clusterAPI.images.kubeadmControlPlane", b.ClusterAPI.Images.KubeadmControlPlane)
	e.Ref("build.clusterAPI.images.docker", b.ClusterAPI.Images.Docker)
	if b.ClusterAPI.Images.TestExtension != "" {
		e.Ref("build.clusterAPI.images.testExtension", b.ClusterAPI.Images.TestExtension)
	}
	if p := b.ClusterAPI.Previous; p != nil {
		validatePrevious(e, p, b.ClusterAPI.Version, b.field("build.clusterAPI.previous.version", EnvClusterAPIPrevious))
	}
	e.Version("build.certManager.version", b.CertManager.Version)
	e.Ref("build.certManager.substituteImage", b.CertManager.SubstituteImage)
	e.Version("build.kustomize.version", b.Kustomize.Version)
	if b.CloudControllerManager.Image != "" {
		e.Ref("build.cloudControllerManager.image", b.CloudControllerManager.Image)
	}

	policy := func(field, p string) {
		if p != PolicyBuild && p != PolicyPull && p != PolicyPullElseBuild {
			e.Add(field, "%q is not %s, %s or %s", p, PolicyBuild, PolicyPull, PolicyPullElseBuild)
		}
	}
	policy(b.field("build.registry.policy", EnvImagePolicy), b.Registry.Policy)
	for _, k := range slices.Sorted(maps.Keys(b.Registry.Policies)) {
		policy(fmt.Sprintf("build.registry.policies[%s]", k), b.Registry.Policies[k])
	}
	registry := func(field, r string) {
		if r != "" && !registryRE.MatchString(r) {
			e.Add(field, "%q is not a registry such as 127.0.0.1:5001 or mirror.example.com/k8s", r)
		}
	}
	registry(b.field("build.registry.mirror", EnvImageMirror), b.Registry.Mirror)
	registry(b.field("build.registry.publish", EnvImagePublish), b.Registry.Publish)
}

// registryRE is a registry host with an optional port and path.
var registryRE = regexp.MustCompile(`^[a-zA-Z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$`)

// field names a build field, with the environment variable that set it.
func (b *Build) field(name, env string) string {
	if v := os.Getenv(env); v != "" {
		return name + " (" + env + ")"
	}
	return name
}

// MinPreviousClusterAPI is the oldest release build.clusterAPI.previous may
// name: the first whose CAPD serves DevMachinePoolTemplate, which the
// ClusterClass of the harness's topology flavors uses for its MachinePool.
// v1.12's CAPD serves the other v1beta2 Dev* kinds but not that one: a
// clusterctl-upgrade run from v1.12.5 failed rendering the template, "no
// matches for kind \"DevMachinePoolTemplate\"" (docs/configuration.md).
const MinPreviousClusterAPI = "v1.13.0"

// validatePrevious checks build.clusterAPI.previous against the version
// under test (current; a working tree's is checked at load, where it is
// derived). versionField is the version's field name, with the
// environment variable that set it.
func validatePrevious(e *Errors, p *PreviousClusterAPI, current, versionField string) {
	const f = "build.clusterAPI.previous"
	e.Version(versionField, p.Version)
	if semver.IsValid(p.Version) {
		switch {
		case semver.Compare(p.Version, MinPreviousClusterAPI) < 0:
			e.Add(versionField, "%q is older than %s, the first release whose CAPD serves the DevMachinePoolTemplate of the harness's ClusterClass", p.Version, MinPreviousClusterAPI)
		case semver.IsValid(current) && semver.Major(p.Version) != semver.Major(current):
			e.Add(versionField, "%q is not of the major of build.clusterAPI.version %q", p.Version, current)
		case semver.IsValid(current) && semver.Compare(p.Version, current) >= 0:
			e.Add(versionField, "%q is not older than build.clusterAPI.version %q: clusterctl upgrade goes from it to the version under test", p.Version, current)
		}
	}
	if c := p.Clusterctl; c != "" {
		if u, err := url.Parse(c); err != nil || !IsNetworkSource(c) || u.Host == "" {
			e.Add(f+".clusterctl", "%q is not an http(s) URL with a host (leave it unset to build clusterctl %s from the module proxy)", c, p.Version)
		}
	}
}
