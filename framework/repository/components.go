// Package repository makes the local clusterctl repository a run installs
// its providers from (Create): the built-in Cluster API providers'
// components rendered with kustomize from their config/default (from the
// release in the module cache, or from a working tree) with the controller
// images rewritten to the locally built ones, their metadata.yaml, the
// config's own providers through upstream's CreateRepository, the CNI
// manifest for the workload clusters' ClusterResourceSet, cert-manager
// marked as provided by the harness, and, unless turned off, startup probes
// on the controllers.
//
// The kustomize binary is built from its module (gomod.Install):
// kustomize's library would pull newer versions of k8s.io/kube-openapi and
// the go-openapi modules into this repository's go.mod than
// client-go/controller-runtime are tested with.
//
// This package does not build images and does not talk to the engine or a
// cluster. Cluster templates are not rendered here.
package repository

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
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// StagingImagePrefix is the image repository of the controllers in Cluster
// API's kustomizations (each gets the tag "main").
const StagingImagePrefix = "gcr.io/k8s-staging-cluster-api/"

// Components renders the components YAML of every active built-in
// provider of cfg (config.ActiveBuiltinProviders) into dir, laid out as
// config.RenderedComponents says, with the release's metadata.yaml beside
// each. The kustomizations come from the Cluster API release in the module
// cache or, with build.clusterAPI.source, from the working tree (which is
// only read). The controller images are rewritten to the ones the harness
// builds. It returns the paths written.
func Components(ctx context.Context, cfg *config.Config, dir string) ([]string, error) {
	providers := cfg.ActiveBuiltinProviders()
	if len(providers) == 0 {
		return nil, nil
	}
	kustomize, err := Kustomize(ctx, cfg.Build.Kustomize)
	if err != nil {
		return nil, err
	}
	// moduleDir returns where a provider's module is: in the tree, or in
	// the module cache.
	tree := cfg.Build.ClusterAPI.Source
	moduleDir := func(mod, treeDir string) (string, error) {
		if tree != "" {
			return filepath.Join(tree, treeDir), nil
		}
		info, err := gomod.Download(ctx, "", module.Version{Path: mod, Version: cfg.ClusterAPIVersion()})
		if err != nil {
			return "", err
		}
		return info.Dir, nil
	}
	root, err := moduleDir(config.ClusterAPIModule, "")
	if err != nil {
		return nil, err
	}
	metadata, err := os.ReadFile(filepath.Join(root, "metadata.yaml"))
	if err != nil {
		return nil, fmt.Errorf("render metadata.yaml: %w", err)
	}
	var written []string
	for _, p := range providers {
		mdir, err := moduleDir(p.Module, p.TreeDir)
		if err != nil {
			return written, err
		}
		components, md := cfg.RenderedComponents(dir, p)
		if err := renderProvider(ctx, kustomize, p, mdir, fmt.Sprintf("%s %s", p.Type, p.Name), metadata, components, md); err != nil {
			return written, err
		}
		written = append(written, components, md)
	}
	prev, err := previousComponents(ctx, cfg, kustomize, dir)
	return append(written, prev...), err
}

// renderProvider renders p's kustomization in its module directory mdir
// (what names it in errors) with the controller image rewritten to
// p.Image, into components, and writes metadata to md.
func renderProvider(ctx context.Context, kustomize string, p config.BuiltinProvider, mdir, what string, metadata []byte, components, md string) error {
	// An absolute path: kustomize reads a relative one that starts with
	// a module directory name ("cluster-api@v1.14.2/...") as a git URL.
	kdir := filepath.Join(mdir, filepath.FromSlash(p.Kustomization))
	out, err := runKustomize(ctx, kustomize, kdir)
	if err != nil {
		return fmt.Errorf("render components of %s: %w", what, err)
	}
	out, err = RewriteComponents(out, map[string]string{p.StagingName: p.Image})
	if err != nil {
		return fmt.Errorf("render components of %s from %s: %w", p.Type+" "+p.Name, kdir, err)
	}
	if err := writeFile(components, out); err != nil {
		return err
	}
	return writeFile(md, metadata)
}

// previousComponents renders the components of build.clusterAPI.previous
// (config.PreviousProviders), always from the release in the module cache,
// into dir beside the current version's.
func previousComponents(ctx context.Context, cfg *config.Config, kustomize, dir string) ([]string, error) {
	providers := cfg.PreviousProviders()
	if len(providers) == 0 {
		return nil, nil
	}
	version := cfg.Build.ClusterAPI.Previous.Version
	var written []string
	var metadata []byte
	for _, p := range providers {
		info, err := gomod.Download(ctx, "", module.Version{Path: p.Module, Version: version})
		if err != nil {
			return written, err
		}
		if p.Module == config.ClusterAPIModule && metadata == nil {
			if metadata, err = os.ReadFile(filepath.Join(info.Dir, "metadata.yaml")); err != nil {
				return written, fmt.Errorf("render metadata.yaml of %s: %w", version, err)
			}
		}
		components, md := config.RenderedComponentsAt(dir, p, version)
		if err := renderProvider(ctx, kustomize, p, info.Dir, fmt.Sprintf("%s %s %s", p.Type, p.Name, version), metadata, components, md); err != nil {
			return written, err
		}
		written = append(written, components, md)
	}
	return written, nil
}

// Kustomize builds the kustomize binary of m (gomod.Install: once per
// version and go version) and returns its path.
func Kustomize(ctx context.Context, m config.Module) (string, error) {
	path := m.Path
	if path == "" {
		path = config.DefaultKustomizeModule
	}
	return gomod.Install(ctx, gomod.Tool{
		Module:  path,
		Version: m.Version,
		LDFlags: []string{"-s", "-w", fmt.Sprintf("-X 'sigs.k8s.io/kustomize/api/provenance.version=%s/%s'", path, m.Version)},
	})
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
