package runtimetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// The test image. EnsureImage makes the small image that integration tests
// run, without a registry: one layer holding the host's busybox-static
// binary (Debian package busybox-static) and an init script, written as a
// docker-archive with go-containerregistry and loaded through the runtime.
//
// The image's default command prints one line to stdout and one to stderr,
// then waits until SIGTERM or SIGINT and exits 0. Its tag carries a hash of
// its content, so EnsureImage builds it once per content and reuses it after.

// ImageRepository is the image repository test images are tagged in.
const ImageRepository = "capd-e2e.local/testimage"

// StdoutLine and StderrLine are what the init script prints at start.
const (
	StdoutLine = "testimage: started"
	StderrLine = "testimage: this line goes to stderr"
)

// BusyboxEnv names the environment variable that overrides where the static
// busybox binary is read from. Default: /bin/busybox.
const BusyboxEnv = "CAPD_E2E_BUSYBOX"

const initScript = `#!/bin/sh
echo "` + StdoutLine + `"
echo "` + StderrLine + `" >&2
trap 'exit 0' TERM INT
while :; do sleep 1 & wait $!; done
`

// Applets are the commands linked to busybox in /bin.
var applets = []string{
	"sh", "cat", "echo", "true", "false", "sleep", "tar", "ls", "mkdir", "rm", "kill",
	"hostname", "env", "head", "tail", "wc", "grep", "sed", "printf", "test", "chmod", "id",
	"cp", "mv", "cmp", "dirname", "timeout",
}

// EnsureImage makes sure the test image exists in the engine and returns its
// reference.
func EnsureImage(ctx context.Context, r runtime.Images) (string, error) {
	busybox, err := readBusybox()
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	sum.Write(busybox)
	sum.Write([]byte(initScript))
	for _, a := range applets {
		sum.Write([]byte(a))
	}
	ref := ImageRepository + ":" + hex.EncodeToString(sum.Sum(nil))[:16]

	if _, err := r.InspectImage(ctx, ref); err == nil {
		return ref, nil
	} else if !errors.Is(err, runtime.ErrNotFound) {
		return "", err
	}
	archive, err := build(ref, busybox)
	if err != nil {
		return "", err
	}
	if err := r.LoadImages(ctx, bytes.NewReader(archive)); err != nil {
		return "", fmt.Errorf("load test image %q: %w", ref, err)
	}
	return ref, nil
}

func readBusybox() ([]byte, error) {
	path := os.Getenv(BusyboxEnv)
	if path == "" {
		path = "/bin/busybox"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read static busybox for the test image (install Debian's busybox-static or set %s): %w", BusyboxEnv, err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("busybox at %s is not an ELF binary: %w", path, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("busybox at %s is dynamically linked; the test image needs busybox-static", path)
		}
	}
	return b, nil
}

func build(ref string, busybox []byte) ([]byte, error) {
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	mtime := time.Unix(0, 0)
	dirs := []string{"bin/", "etc/", "tmp/", "var/", "var/log/", "proc/", "sys/", "dev/", "root/"}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"bin/busybox", 0o755, busybox},
		{"init.sh", 0o755, []byte(initScript)},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n")},
		{"etc/group", 0o644, []byte("root:x:0:\n")},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	for _, a := range applets {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("make test image layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("make test image: %w", err)
	}
	img, err = mutate.Config(img, v1.Config{
		Entrypoint: []string{"/init.sh"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels:     map[string]string{"e2e.capd.x-k8s.io/test-image": "true"},
	})
	if err != nil {
		return nil, fmt.Errorf("configure test image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read test image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", goruntime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("set test image platform: %w", err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return nil, fmt.Errorf("parse test image tag %q: %w", ref, err)
	}
	var out bytes.Buffer
	if err := tarball.Write(tag, img, &out); err != nil {
		return nil, fmt.Errorf("write test image archive: %w", err)
	}
	return out.Bytes(), nil
}
