package gobuild

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// LDFlagsX returns `-X 'pkg.name=value'` linker flags for the settings, in
// the given order. A setting with an empty value is left out, keeping the
// package's default.
func LDFlagsX(settings ...Setting) []string {
	var out []string
	for _, s := range settings {
		if s.Value == "" {
			continue
		}
		out = append(out, fmt.Sprintf("-X '%s.%s=%s'", s.Package, s.Name, s.Value))
	}
	return out
}

// Setting is one string variable set at link time.
type Setting struct {
	// Package is the variable's import path, Name its name.
	Package, Name string
	// Value is its value.
	Value string
}

// Source describes the release a binary is built from, for the version
// variables projects set at link time.
type Source struct {
	// Version is the module version, e.g. "v1.36.3".
	Version string
	// Commit is the release's commit hash, if known (the module proxy
	// reports it for most modules, see ModuleInfo).
	Commit string
	// Time is the release's commit time; it stands in for the build date,
	// which keeps binaries reproducible. Zero leaves the date unset.
	Time time.Time
}

// SourceOf returns the Source of a downloaded module.
func SourceOf(info gomod.ModuleInfo) Source {
	return Source{Version: info.Version, Commit: info.Commit, Time: info.Time}
}

func (s Source) date() string {
	if s.Time.IsZero() {
		return ""
	}
	return s.Time.UTC().Format("2006-01-02T15:04:05Z")
}

// gitVersionFields returns "1", "36" for v1.36.3 (as k8s' and Cluster API's
// hack/…/version.sh derive gitMajor and gitMinor).
func gitVersionFields(version string) (major, minor string) {
	mm := strings.TrimPrefix(semver.MajorMinor(version), "v")
	major, minor, _ = strings.Cut(mm, ".")
	return major, minor
}

// KubernetesLDFlags are the version settings of k8s.io/kubernetes'
// hack/lib/version.sh: gitVersion, gitMajor, gitMinor, gitCommit,
// gitTreeState and buildDate, in both k8s.io/component-base/version and
// k8s.io/client-go/pkg/version. `kube-apiserver --version` then prints
// "Kubernetes v1.36.3", and kubeadm checks versions against them.
func KubernetesLDFlags(src Source) []string {
	major, minor := gitVersionFields(src.Version)
	var out []string
	for _, pkg := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		out = append(out, LDFlagsX(
			Setting{pkg, "buildDate", src.date()},
			Setting{pkg, "gitCommit", src.Commit},
			Setting{pkg, "gitTreeState", "clean"},
			Setting{pkg, "gitVersion", src.Version},
			Setting{pkg, "gitMajor", major},
			Setting{pkg, "gitMinor", minor},
		)...)
	}
	return out
}

// KubernetesTags are the build tags of k8s.io/kubernetes' release builds
// (hack/lib/golang.sh, when DBG is not set): selinux, notest and
// grpcnotrace. notest leaves out apimachinery's fuzzing helpers, and
// grpcnotrace keeps gRPC from importing golang.org/x/net/trace, whose
// html/template use of reflect's MethodByName stops the linker from
// dropping unused methods. Kubernetes checks that its server binaries keep
// that dead code elimination (hack/verify-deadcode-elimination.sh); without
// the tags they are larger than released ones and take longer to link.
var KubernetesTags = []string{"selinux", "notest", "grpcnotrace"}

// ClusterAPILDFlags are the settings of Cluster API's
// hack/scripts/release/version.sh, in sigs.k8s.io/cluster-api/version (used
// by the core, kubeadm and CAPD managers alike).
func ClusterAPILDFlags(src Source) []string {
	const pkg = "sigs.k8s.io/cluster-api/version"
	major, minor := gitVersionFields(src.Version)
	return LDFlagsX(
		Setting{pkg, "buildDate", src.date()},
		Setting{pkg, "gitCommit", src.Commit},
		Setting{pkg, "gitTreeState", "clean"},
		Setting{pkg, "gitVersion", src.Version},
		Setting{pkg, "gitMajor", major},
		Setting{pkg, "gitMinor", minor},
	)
}

// EtcdLDFlags sets go.etcd.io/etcd/api/v3/version.GitSHA to the short
// commit, as etcd's scripts/build-binary.sh does (etcd's version itself is a
// constant of that package).
func EtcdLDFlags(src Source) []string {
	return LDFlagsX(Setting{"go.etcd.io/etcd/api/v3/version", "GitSHA", shortCommit(src.Commit)})
}

// CoreDNSTags are the build tags of CoreDNS' Makefile (its GOTAGS default),
// so that CoreDNS is built as released: grpcnotrace. It keeps
// golang.org/x/net/trace out of v1.14.2, not of v1.14.6, where
// github.com/mwitkow/go-conntrack imports it.
var CoreDNSTags = []string{"grpcnotrace"}

// CoreDNSLDFlags sets github.com/coredns/coredns/coremain.GitCommit, as
// CoreDNS' Makefile does (CoreVersion is a constant).
func CoreDNSLDFlags(src Source) []string {
	return LDFlagsX(Setting{"github.com/coredns/coredns/coremain", "GitCommit", shortCommit(src.Commit)})
}

// KubeRouterLDFlags sets Version and BuildDate in kube-router's
// pkg/version, as its Makefile does (with `git describe`, which is the tag
// for a release). modulePath is kube-router's module path.
func KubeRouterLDFlags(modulePath string, src Source) []string {
	pkg := modulePath + "/pkg/version"
	return LDFlagsX(Setting{pkg, "Version", src.Version}, Setting{pkg, "BuildDate", src.date()})
}

func shortCommit(c string) string {
	if len(c) > 9 {
		return c[:9]
	}
	return c
}
