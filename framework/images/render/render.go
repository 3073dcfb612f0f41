// Package render writes the files `make images` renders rather than builds:
// the four Cluster API providers' components YAML (kustomize on the
// providers' config/default in the module cache, with the controller images
// rewritten to the locally built ones), their clusterctl metadata.yaml, and
// the kube-router CNI manifest.
//
// The kustomize binary is compiled from its module with package gobuild:
// kustomize's library would pull newer versions of k8s.io/kube-openapi and
// the go-openapi modules into this repository's go.mod than
// client-go/controller-runtime are tested with.
//
// This package does not build images and does not talk to the engine or a
// cluster. Cluster templates are not rendered here.
package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/module"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/images/gobuild"
)

// Renderer renders the files. The zero value is not usable: set Go.
type Renderer struct {
	// Go downloads modules and compiles kustomize. Required.
	Go *gobuild.Builder
}

// StagingImagePrefix is the image repository of the controllers in Cluster
// API's kustomizations (each gets the tag "main").
const StagingImagePrefix = "gcr.io/k8s-staging-cluster-api/"

// Provider is one Cluster API provider to render.
type Provider struct {
	// Type is the clusterctl provider type (config.CoreProvider, ...) and
	// Name its clusterctl name; together they select the entry of
	// config.Providers to write.
	Type, Name string
	// Module holds the kustomization at Dir (relative to the module root).
	Module, Dir string
	// StagingName is the image name in the kustomization
	// (StagingImagePrefix + StagingName + ":main").
	StagingName string
	// Image is the locally built image that replaces it.
	Image string
}

// ClusterAPIProviders returns the four providers of cfg's Cluster API
// release: core, kubeadm bootstrap, kubeadm control plane and CAPD.
func ClusterAPIProviders(cfg *config.Config) []Provider {
	imgs := cfg.Build.ClusterAPI.Images
	const capi = "sigs.k8s.io/cluster-api"
	return []Provider{
		{config.CoreProvider, "cluster-api", capi, "core/config/default", "cluster-api-controller", imgs.Core},
		{config.BootstrapProvider, "kubeadm", capi, "bootstrap/kubeadm/config/default", "kubeadm-bootstrap-controller", imgs.KubeadmBootstrap},
		{config.ControlPlaneProvider, "kubeadm", capi, "controlplane/kubeadm/config/default", "kubeadm-control-plane-controller", imgs.KubeadmControlPlane},
		{config.InfrastructureProvider, "docker", capi + "/test", "infrastructure/docker/config/default", "capd-manager", imgs.Docker},
	}
}

// Components renders the components YAML of every provider into the file
// the config's provider entry for the Cluster API version names (its
// "value"), and the release's metadata.yaml (from the root of
// sigs.k8s.io/cluster-api, which clusterctl's release assets use for all
// four providers) into that entry's file named metadata.yaml. It returns the
// paths written.
func (r *Renderer) Components(ctx context.Context, cfg *config.Config) ([]string, error) {
	version := cfg.Build.ClusterAPI.Version
	kustomize, err := r.kustomize(ctx, cfg.Build.Kustomize)
	if err != nil {
		return nil, err
	}
	capiInfo, err := r.Go.Download(ctx, module.Version{Path: "sigs.k8s.io/cluster-api", Version: version})
	if err != nil {
		return nil, err
	}
	metadata, err := os.ReadFile(filepath.Join(capiInfo.Dir, "metadata.yaml"))
	if err != nil {
		return nil, fmt.Errorf("render metadata.yaml: %w", err)
	}
	var written []string
	for _, p := range ClusterAPIProviders(cfg) {
		pv, err := providerVersion(cfg, p.Type, p.Name, version)
		if err != nil {
			return written, err
		}
		info, err := r.Go.Download(ctx, module.Version{Path: p.Module, Version: version})
		if err != nil {
			return written, err
		}
		// An absolute path: kustomize reads a relative one that starts with
		// a module directory name ("cluster-api@v1.14.2/...") as a git URL.
		dir := filepath.Join(info.Dir, filepath.FromSlash(p.Dir))
		out, err := runKustomize(ctx, kustomize, dir)
		if err != nil {
			return written, fmt.Errorf("render components of %s %s: %w", p.Type, p.Name, err)
		}
		out, err = RewriteComponents(out, map[string]string{p.StagingName: p.Image})
		if err != nil {
			return written, fmt.Errorf("render components of %s %s: %w", p.Type, p.Name, err)
		}
		target := cfg.ResolvePath(pv.Value)
		if err := writeFile(target, out); err != nil {
			return written, err
		}
		written = append(written, target)
		for _, f := range pv.Files {
			if filepath.Base(f.SourcePath) != "metadata.yaml" {
				continue // cluster templates are rendered elsewhere
			}
			target := cfg.ResolvePath(f.SourcePath)
			if err := writeFile(target, metadata); err != nil {
				return written, err
			}
			written = append(written, target)
		}
	}
	return written, nil
}

// providerVersion finds the config entry of a provider version.
func providerVersion(cfg *config.Config, typ, name, version string) (config.ProviderVersion, error) {
	for _, p := range cfg.Providers {
		if p.Type != typ || p.Name != name {
			continue
		}
		for _, v := range p.Versions {
			if v.Name == version {
				if v.Type != "" && v.Type != config.URLSource {
					return v, fmt.Errorf("providers: %s %s %s: type is %q, want %q (a rendered file)", typ, name, version, v.Type, config.URLSource)
				}
				return v, nil
			}
		}
		return config.ProviderVersion{}, fmt.Errorf("providers: %s %s has no version %s (build.clusterAPI.version)", typ, name, version)
	}
	return config.ProviderVersion{}, fmt.Errorf("providers: no %s named %s", typ, name)
}

// kustomize builds the kustomize binary and returns its path.
func (r *Renderer) kustomize(ctx context.Context, m config.Module) (string, error) {
	path := m.Path
	if path == "" {
		path = "sigs.k8s.io/kustomize/kustomize/v5"
	}
	res, err := r.Go.Build(ctx, gobuild.Target{
		Modules:  []module.Version{{Path: path, Version: m.Version}},
		Packages: []string{path},
		LDFlags:  gobuild.LDFlagsX(gobuild.Setting{Package: "sigs.k8s.io/kustomize/api/provenance", Name: "version", Value: path + "/" + m.Version}),
	})
	if err != nil {
		return "", err
	}
	return res.Path(gobuild.ExecName(path)), nil
}

func runKustomize(ctx context.Context, kustomize, dir string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kustomize, "build", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

var (
	stagingImageLine = regexp.MustCompile(`(?m)^(\s*(?:-\s+)?image:\s*)` + regexp.QuoteMeta(StagingImagePrefix) + `([A-Za-z0-9._-]+):main[ \t]*$`)
	pullAlwaysLine   = regexp.MustCompile(`(?m)^(\s*(?:-\s+)?imagePullPolicy:\s*)Always[ \t]*$`)
)

// RewriteComponents rewrites rendered components YAML for local images:
// each "image: gcr.io/k8s-staging-cluster-api/<name>:main" becomes the image
// images maps <name> to, and "imagePullPolicy: Always" becomes IfNotPresent
// (Always would make the kubelet pull, which cannot work here). Everything
// else is kept byte for byte. It is an error when a staging image has no
// mapping, when a staging image reference remains anywhere else, or when no
// image was rewritten at all (the kustomization changed shape).
func RewriteComponents(yaml []byte, images map[string]string) ([]byte, error) {
	var errs []string
	n := 0
	out := stagingImageLine.ReplaceAllFunc(yaml, func(line []byte) []byte {
		m := stagingImageLine.FindSubmatch(line)
		img, ok := images[string(m[2])]
		if !ok || img == "" {
			errs = append(errs, fmt.Sprintf("no local image for %s%s:main", StagingImagePrefix, m[2]))
			return line
		}
		n++
		return append(append([]byte{}, m[1]...), img...)
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("rewrite images: %s", strings.Join(errs, "; "))
	}
	if n == 0 {
		return nil, fmt.Errorf("rewrite images: no %s<name>:main image found", StagingImagePrefix)
	}
	if i := bytes.Index(out, []byte(StagingImagePrefix)); i >= 0 {
		return nil, fmt.Errorf("rewrite images: a reference to %s remains outside an image field: %q", StagingImagePrefix, lineAt(out, i))
	}
	return pullAlwaysLine.ReplaceAll(out, []byte("${1}IfNotPresent")), nil
}

func lineAt(b []byte, i int) string {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	end := bytes.IndexByte(b[i:], '\n')
	if end < 0 {
		return string(b[start:])
	}
	return string(b[start : i+end])
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
