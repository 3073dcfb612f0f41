// Package binaries copies a program out of an image into a host directory,
// after checking the version it reports, through the harness's container
// runtime: upstream's KubeadmJoinOldNodesSpec joins a node with the
// kubeadm of the control plane's newer release, which upstream's flavor
// downloads from dl.k8s.io at boot; capd-e2e takes it from its own node
// image of that release and mounts it into the machines instead, so the
// spec runs offline and tests the kubeadm the harness built.
//
// Why not a library: what is copied, and checked, is a file in an image
// the engine holds (built here or pulled), reached through the runtime
// interface every container operation of the harness goes through; a
// registry client (go-containerregistry's crane export) would need the
// image in a registry, which the harness does not require.
package binaries

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Engine is what Extract needs of the container runtime.
type Engine interface {
	RunContainer(ctx context.Context, spec runtime.ContainerSpec) (string, error)
	Wait(ctx context.Context, nameOrID string) (int, error)
	Logs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error
	CopyFrom(ctx context.Context, nameOrID, path string) (io.ReadCloser, error)
	RemoveContainer(ctx context.Context, nameOrID string) error
}

var _ Engine = runtime.Runtime(nil)

// DefaultTimeout bounds Extract when the input gives no Timeout: one
// short-lived container and a copy of one file.
const DefaultTimeout = 2 * time.Minute

// removeTimeout bounds the removal of Extract's container, which runs
// on a context of its own (the caller's may have ended).
const removeTimeout = 30 * time.Second

// ExtractInput says which program to copy out of which image.
type ExtractInput struct {
	// Image holds the program; the engine must have it. Required.
	Image string
	// Path is the program's absolute path in Image. Required.
	Path string
	// VersionArgs are the arguments with which the program prints its
	// version alone, e.g. kubeadm's "version -o short". Required.
	VersionArgs []string
	// Version is what the program must print (surrounding space aside).
	// Required: a program of another version is an error, not a copy.
	Version string
	// Dest is the host file to write, with mode 0755; its directory is
	// created. Required.
	Dest string
	// Container is the name of the container Extract runs. Required.
	Container string
	// Labels go on the container: the run's, so a run killed midway
	// leaves nothing the reaper misses.
	Labels map[string]string
	// Timeout bounds the whole of Extract. If zero, DefaultTimeout.
	Timeout time.Duration
}

// Extract runs in.Path with in.VersionArgs in a container of in.Image,
// checks that it printed in.Version, and copies the program to in.Dest.
// The container is removed whatever happens. Every error names the image
// and the program.
func Extract(ctx context.Context, rt Engine, in ExtractInput) (err error) {
	var missing []string
	for field, unset := range map[string]bool{
		"Image": in.Image == "", "Path": !filepath.IsAbs(in.Path), "VersionArgs": len(in.VersionArgs) == 0,
		"Version": in.Version == "", "Dest": in.Dest == "", "Container": in.Container == "",
	} {
		if unset {
			missing = append(missing, field)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("binaries: extract %q from %q: set %s (Path absolute)", in.Path, in.Image, strings.Join(missing, ", "))
	}
	timeout := in.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	what := fmt.Sprintf("%s of image %s", in.Path, in.Image)

	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{
		Name: in.Container, Image: in.Image, Labels: in.Labels,
		Entrypoint: []string{in.Path}, Cmd: in.VersionArgs,
	}); err != nil {
		return fmt.Errorf("binaries: run %s: %w", what, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		if rerr := rt.RemoveContainer(rctx, in.Container); rerr != nil {
			err = errors.Join(err, fmt.Errorf("binaries: remove container %q: %w", in.Container, rerr))
		}
	}()
	code, err := rt.Wait(ctx, in.Container)
	if err != nil {
		return fmt.Errorf("binaries: wait for %s %s: %w", what, strings.Join(in.VersionArgs, " "), err)
	}
	var out strings.Builder
	if err := rt.Logs(ctx, in.Container, &out, &out); err != nil {
		return fmt.Errorf("binaries: read what %s printed: %w", what, err)
	}
	got := strings.TrimSpace(out.String())
	if code != 0 {
		return fmt.Errorf("binaries: %s %s exited %d: %s", what, strings.Join(in.VersionArgs, " "), code, got)
	}
	if got != in.Version {
		return fmt.Errorf("binaries: %s is version %q, want %q", what, got, in.Version)
	}

	rc, err := rt.CopyFrom(ctx, in.Container, in.Path)
	if err != nil {
		return fmt.Errorf("binaries: copy %s: %w", what, err)
	}
	defer rc.Close()
	if err := writeOnlyFile(tar.NewReader(rc), in.Dest); err != nil {
		return fmt.Errorf("binaries: copy %s to %s: %w", what, in.Dest, err)
	}
	return nil
}

// writeOnlyFile writes the archive's one entry, a regular file, to dest,
// through a temporary file renamed into place: a reader never sees a
// partial program.
func writeOnlyFile(tr *tar.Reader, dest string) error {
	hdr, err := tr.Next()
	if err != nil {
		return fmt.Errorf("read the archive: %w", err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return fmt.Errorf("%s is not a regular file (tar type %q); give the path it links to", hdr.Name, hdr.Typeflag)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, tr)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return fmt.Errorf("copied %d bytes of %d", n, hdr.Size)
	}
	if _, err := tr.Next(); err != io.EOF {
		return fmt.Errorf("the archive holds more than %s", hdr.Name)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}
