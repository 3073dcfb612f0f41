// Package image builds the cert-manager substitute's container image (the
// plan.KindCertManagerSubstitute step of `make images`): the binary of
// cmd/cert-manager-substitute, compiled from this repository with
// CGO_ENABLED=0, alone in one layer, with ENTRYPOINT
// ["/cert-manager-substitute"].
//
// It compiles on the host with the go command and stores the image through
// package oci; it must not start containers or reach a registry.
package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
)

// Package is the main package the image runs, relative to the repository.
const Package = "./cmd/cert-manager-substitute"

// Binary is the path of the program in the image, and its entrypoint.
const Binary = "/cert-manager-substitute"

// Files are the repository paths whose content determines the image; give
// them to plan.Options.Files for plan.KindCertManagerSubstitute so that a
// change rebuilds it.
var Files = []string{
	"cmd/cert-manager-substitute",
	"framework/certmanager",
	"factory/gobuild", // GCFlags
	"internal/gomod",
	"factory/oci",
	"go.mod",
	"go.sum",
}

// Builder builds the substitute's image. It implements plan.Builder.
type Builder struct {
	// Images stores the image. Required.
	Images runtime.Images
	// RepoRoot is the root of this repository, the module the binary is
	// built from. Required.
	RepoRoot string
	// Go is the go command; if unset, "go" from PATH.
	Go string
	// TempDir holds the binary while the image is made; if unset,
	// os.TempDir().
	TempDir string
	// Slots, if set, bounds the go commands compiling at once, with the
	// other builders' (gobuild.Slots).
	Slots *gobuild.Slots
}

var _ plan.Builder = (*Builder)(nil)

// Build compiles the binary for step.Inputs[plan.InputArch] (if unset, the
// go command's default) and stores the image as step.Image, labelled
// step.Labels().
func (b *Builder) Build(ctx context.Context, step plan.Step) error {
	if b.Images == nil || b.RepoRoot == "" {
		return errors.New("build cert-manager substitute: Images and RepoRoot are required")
	}
	dir, err := os.MkdirTemp(b.TempDir, "cert-manager-substitute-")
	if err != nil {
		return fmt.Errorf("build image %q: %w", step.Image, err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "cert-manager-substitute")
	if err := b.compile(ctx, step.Inputs[plan.InputArch], bin); err != nil {
		return fmt.Errorf("build image %q: %w", step.Image, err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("build image %q: %w", step.Image, err)
	}
	labels := map[string]string{
		"org.opencontainers.image.title":  "cert-manager-substitute",
		"org.opencontainers.image.source": "github.com/capd-e2e/capd-e2e/cmd/cert-manager-substitute",
	}
	maps.Copy(labels, step.Labels())
	return oci.Build(ctx, b.Images, oci.Spec{
		Ref: step.Image,
		Layers: []oci.Layer{oci.LayerFromFiles([]oci.File{
			{Path: strings.TrimPrefix(Binary, "/"), Mode: 0o755, Data: data},
			// client-go and net/http may want a writable temp directory.
			{Path: "tmp", Mode: 0o1777, Dir: true},
		})},
		Config: oci.Config{
			Entrypoint: []string{Binary},
			// The Deployment runs it as this user too (runAsNonRoot).
			User:   "65532:65532",
			Labels: labels,
		},
	})
}

// compile runs go build in the repository, stripped, the way the harness's
// tools and suite are compiled (gobuild.HarnessEnv, gobuild.HarnessFlags),
// so that it reuses the packages they compiled.
func (b *Builder) compile(ctx context.Context, arch, out string) error {
	goCmd := b.Go
	if goCmd == "" {
		goCmd = "go"
	}
	args := slices.Concat([]string{"build"}, gobuild.HarnessFlags, []string{"-ldflags=-s -w", "-o", out, Package})
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = b.RepoRoot
	cmd.Env = slices.Concat(os.Environ(), gobuild.HarnessEnv, []string{"GOOS=linux", "GOFLAGS=-mod=readonly", "GOWORK=off"})
	if arch != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+arch)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := b.Slots.Hold(ctx, func() error { return cputime.Run(ctx, cmd) }); err != nil {
		return fmt.Errorf("go build %s: %w: %s", Package, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
