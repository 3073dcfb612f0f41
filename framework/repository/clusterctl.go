package repository

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// ClusterctlPackage is clusterctl's main package, in Cluster API's root
// module.
const ClusterctlPackage = config.ClusterAPIModule + "/cmd/clusterctl"

// FieldPreviousClusterctl is the config field PreviousClusterctl's errors
// name.
const FieldPreviousClusterctl = "build.clusterAPI.previous.clusterctl"

// maxClusterctl bounds a downloaded clusterctl (a release's is about
// 70 MiB).
const maxClusterctl = 512 << 20

// PreviousClusterctl returns the clusterctl of build.clusterAPI.previous:
// downloaded from its URL ({OS} and {ARCH} replaced, as upstream's
// InitWithBinary does) into the cache once per URL, or, when no URL is
// set, built from cmd/clusterctl of that release (gomod.Install: once per
// version and go version) with the version settings of Cluster API's
// release builds, so that `clusterctl version` tells the release. It
// checks that the binary runs (`clusterctl version`). Errors name the
// field. ctx bounds the download or build.
func PreviousClusterctl(ctx context.Context, cfg *config.Config) (string, error) {
	p := cfg.Build.ClusterAPI.Previous
	if p == nil {
		return "", fmt.Errorf("build.clusterAPI.previous: unset: no release to upgrade from")
	}
	var (
		bin string
		err error
	)
	if p.Clusterctl != "" {
		u := strings.NewReplacer("{OS}", goruntime.GOOS, "{ARCH}", goruntime.GOARCH).Replace(p.Clusterctl)
		if bin, err = download(ctx, u); err != nil {
			return "", fmt.Errorf("%s: %q: %w", FieldPreviousClusterctl, u, err)
		}
	} else {
		major, minor, _ := strings.Cut(strings.TrimPrefix(semver.MajorMinor(p.Version), "v"), ".")
		const v = config.ClusterAPIModule + "/version"
		bin, err = gomod.Install(ctx, gomod.Tool{
			Module: config.ClusterAPIModule, Version: p.Version, Package: ClusterctlPackage,
			LDFlags: []string{"-s", "-w",
				fmt.Sprintf("-X '%s.gitVersion=%s'", v, p.Version), fmt.Sprintf("-X '%s.gitMajor=%s'", v, major),
				fmt.Sprintf("-X '%s.gitMinor=%s'", v, minor), fmt.Sprintf("-X '%s.gitTreeState=clean'", v)},
		})
		if err != nil {
			return "", fmt.Errorf("build.clusterAPI.previous.version: build clusterctl %s: %w", p.Version, err)
		}
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, bin, "version", "-o", "short").CombinedOutput()
	if err != nil {
		if p.Clusterctl != "" {
			// Not kept in the cache: the next run downloads it again.
			_ = os.Remove(bin) // a binary left behind is replaced by the next download
		}
		return "", fmt.Errorf("%s: %s does not run: %w: %s", FieldPreviousClusterctl, bin, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// download fetches u into the cache (clusterctl/<hash of u>/clusterctl),
// unless it is there already, and returns the file's path.
func download(ctx context.Context, u string) (string, error) {
	cache, err := gomod.CacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(u))
	dir := filepath.Join(cache, "clusterctl", hex.EncodeToString(sum[:])[:16])
	bin := filepath.Join(dir, "clusterctl")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}
	f, err := os.CreateTemp(dir, ".download-")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	n, err := io.Copy(f, io.LimitReader(resp.Body, maxClusterctl+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("%s, then reading the body: %w", resp.Status, err)
	case n > maxClusterctl:
		return "", fmt.Errorf("larger than %d MiB: not a clusterctl binary", maxClusterctl>>20)
	}
	if err := os.Chmod(f.Name(), 0o755); err != nil {
		return "", err
	}
	return bin, os.Rename(f.Name(), bin)
}
