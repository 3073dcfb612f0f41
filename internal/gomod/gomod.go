// Package gomod is what the harness needs of the go command at run time: a
// module version's source in the module cache (Download) and a tool built
// from a module (Install), each reused once there. The suite uses it to
// render Cluster API's components (their kustomizations, kustomize itself)
// and kube-router's manifest; the image factory's builder (factory/gobuild)
// downloads through it.
//
// It is internal: it is the harness's plumbing, not part of what a provider
// uses. It must not know about images or the container engine.
package gomod

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/module"

	"github.com/capd-e2e/capd-e2e/internal/cputime"
)

// EnvCacheDir overrides the default cache directory.
const EnvCacheDir = "CAPD_E2E_CACHE"

// CacheDir returns the harness's cache directory: $CAPD_E2E_CACHE, or
// $HOME/.cache/capd-e2e.
func CacheDir() (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cache directory: set %s: %w", EnvCacheDir, err)
	}
	return filepath.Join(home, ".cache", "capd-e2e"), nil
}

// ModuleInfo is what the module proxy knows about a module version.
type ModuleInfo struct {
	// Path and Version identify the module.
	Path, Version string
	// Dir is the module's extracted source in the module cache.
	Dir string
	// GoMod is the path of its go.mod in the module cache.
	GoMod string
	// Time is the version's commit time, when the proxy tells it.
	Time time.Time
	// Commit is the VCS commit hash, when the proxy tells it.
	Commit string
}

// Download fetches a module version into the module cache (a no-op when it
// is there) and describes it, with the go command goCmd ("" means "go" from
// PATH). A proxy that answers 5xx or not at all is asked again, up to
// downloadAttempts times with backoff: the module proxy has transient
// outages, and a cold image build makes hundreds of requests.
func Download(ctx context.Context, goCmd string, m module.Version) (ModuleInfo, error) {
	var err error
	for attempt, delay := 1, 2*time.Second; ; attempt, delay = attempt+1, delay*2 {
		var info ModuleInfo
		var transient bool
		info, transient, err = download(ctx, goCmd, m)
		if err == nil || !transient || attempt == downloadAttempts {
			return info, err
		}
		select {
		case <-ctx.Done():
			return ModuleInfo{}, fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-time.After(delay):
		}
	}
}

// downloadAttempts bounds Download's retries of a transient failure.
const downloadAttempts = 5

// transientProxyError matches the go command's words for a proxy outage.
var transientProxyError = regexp.MustCompile(`\b5\d\d [A-Z][A-Za-z ]+|connection (timeout|reset|refused)|i/o timeout|TLS handshake timeout|unexpected EOF`)

func download(ctx context.Context, goCmd string, m module.Version) (ModuleInfo, bool, error) {
	cmd := exec.CommandContext(ctx, goCommand(goCmd), "mod", "download", "-json", m.Path+"@"+m.Version)
	// Outside any module: the download must not depend on where we run.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cputime.Run(ctx, cmd)
	var doc struct {
		Path, Version, Dir, GoMod, Info, Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || runErr != nil || doc.Error != "" {
		msg := strings.TrimSpace(doc.Error + " " + stderr.String())
		if runErr == nil {
			runErr = err
		}
		return ModuleInfo{}, ctx.Err() == nil && transientProxyError.MatchString(msg),
			fmt.Errorf("download module %s@%s: %v: %s", m.Path, m.Version, runErr, msg)
	}
	info := ModuleInfo{Path: doc.Path, Version: doc.Version, Dir: doc.Dir, GoMod: doc.GoMod}
	// The .info file holds the commit time and, from most proxies, the
	// commit; `go mod download -json` reports neither.
	if data, err := os.ReadFile(doc.Info); err == nil {
		var vi struct {
			Time   time.Time
			Origin struct{ Hash string }
		}
		if json.Unmarshal(data, &vi) == nil {
			info.Time, info.Commit = vi.Time, vi.Origin.Hash
		}
	}
	return info, false, nil
}

func goCommand(goCmd string) string {
	if goCmd == "" {
		return "go"
	}
	return goCmd
}
