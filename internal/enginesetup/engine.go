package enginesetup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// EnsureEngine checks that a Docker-API engine answers at DOCKER_HOST
// (default: the local socket), starting dockerd under the opt-in when none
// does, and with privilegedNesting that it can run the privileged
// containers kind and CAPD create: kind's inotify limits, Podman's host
// settings (CheckPodman), and a Docker of 23 or later where the
// capability bounding set lacks CAP_SYS_RESOURCE (older ones fail with
// "unable to apply caps"), which under the opt-in it installs from Debian
// trixie. It returns the engine that answers.
func (h *Host) EnsureEngine(ctx context.Context, privilegedNesting bool) (runtime.EngineInfo, error) {
	h.HugePages()
	info, err := h.engine(ctx, "")
	if err != nil {
		if info, err = h.startEngine(ctx, err); err != nil {
			return info, err
		}
	}
	if !privilegedNesting {
		return info, nil
	}
	if err := h.Inotify(); err != nil {
		return info, err
	}
	if info.Podman {
		changed, err := h.CheckPodman()
		if err == nil && changed {
			err = errors.New("restart the Podman service for the new settings (capd-e2e engine podman --stop, then capd-e2e engine podman starts it again if it was capd-e2e's)")
		}
		return info, err
	}
	major, _, _ := strings.Cut(info.Version, ".")
	if n, err := strconv.Atoi(major); err == nil && n >= 23 {
		return info, nil
	}
	has, set, err := h.hasSysResource()
	if err != nil || has {
		return info, err
	}
	h.logf("engine %s is older than 23 and this host's capability bounding set (%s) lacks CAP_SYS_RESOURCE: privileged containers (kind's and CAPD's nodes) would fail with \"unable to apply caps\"", info.Version, set)
	if !h.Mode.Fix {
		return info, fmt.Errorf(`install Docker >= 23 and restart it; on Debian bookworm, Debian trixie's docker.io works:
  echo 'deb http://deb.debian.org/debian trixie main' >/etc/apt/sources.list.d/trixie.list
  printf 'Package: *\nPin: release n=trixie\nPin-Priority: 100\n' >/etc/apt/preferences.d/trixie
  apt-get update && apt-get install -t trixie docker.io && systemctl restart docker
or rerun with %s=true (or =replace, to also restart a dockerd it did not start) to have this done (docs/reliability.md, "The engine")`, EnvFix)
	}
	return h.upgradeDocker(ctx)
}

// startEngine starts dockerd, under the opt-in, when no engine answers at
// the local socket.
func (h *Host) startEngine(ctx context.Context, why error) (runtime.EngineInfo, error) {
	if host := os.Getenv("DOCKER_HOST"); host != "" && host != defaultSocket {
		return runtime.EngineInfo{}, fmt.Errorf("no engine answers at DOCKER_HOST=%s (%v): start it (Podman: capd-e2e engine podman), or unset DOCKER_HOST for the local one", host, why)
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		return runtime.EngineInfo{}, fmt.Errorf("no engine answers at %s and dockerd is not installed: install Docker >= 23 (Debian: apt-get install docker.io)", defaultSocket)
	}
	if !h.Mode.Fix {
		return runtime.EngineInfo{}, fmt.Errorf("no engine answers at %s (%v): start it (e.g. 'systemctl start docker', or 'dockerd &'), or rerun with %s=true to have dockerd started", defaultSocket, why, EnvFix)
	}
	h.logf("starting dockerd (%s; log: %s)", EnvFix, DockerdLog)
	return h.startDockerd(ctx)
}

func (h *Host) startDockerd(ctx context.Context) (runtime.EngineInfo, error) {
	var info runtime.EngineInfo
	ready := func() bool {
		var err error
		info, err = h.engine(ctx, "")
		return err == nil
	}
	err := h.startDaemon(ctx, DockerdPidFile, DockerdLog, time.Minute, ready, "dockerd")
	return info, err
}

// upgradeDocker installs Debian trixie's docker.io, pinned so that nothing
// else comes from trixie, and restarts the dockerd it started (by pid), or
// under Replace the one dockerd's own pid file names.
func (h *Host) upgradeDocker(ctx context.Context) (runtime.EngineInfo, error) {
	if _, err := os.Stat(h.path("/etc/debian_version")); err != nil {
		return runtime.EngineInfo{}, errors.New("not Debian: install Docker >= 23 yourself")
	}
	running := ""
	if _, err := h.engine(ctx, ""); err == nil {
		if _, ours := h.process(DockerdPidFile, "dockerd"); ours {
			running = DockerdPidFile
		} else if pid, ok := h.process(SystemDockerdPidFile, "dockerd"); ok && h.Mode.Replace {
			running = SystemDockerdPidFile
			h.logf("%s=replace: will restart the running dockerd (pid %d from %s) after the upgrade", EnvFix, pid, SystemDockerdPidFile)
		}
		if running == "" {
			return runtime.EngineInfo{}, fmt.Errorf("the running dockerd was not started by capd-e2e (no live pid in %s): restart it yourself after the upgrade, or rerun with %s=replace to have the dockerd named by %s restarted; refusing to kill it",
				DockerdPidFile, EnvFix, SystemDockerdPidFile)
		}
	}
	files := map[string]string{
		"/etc/apt/sources.list.d/capd-e2e-trixie.sources": "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
		"/etc/apt/preferences.d/capd-e2e-trixie":          "Package: *\nPin: release n=trixie\nPin-Priority: 100\n",
	}
	for f, content := range files {
		if err := os.MkdirAll(filepath.Dir(h.path(f)), 0o755); err != nil {
			return runtime.EngineInfo{}, err
		}
		if err := os.WriteFile(h.path(f), []byte(content), 0o644); err != nil {
			return runtime.EngineInfo{}, err
		}
	}
	if err := h.command(ctx, "apt-get", "update", "-qq"); err != nil {
		return runtime.EngineInfo{}, err
	}
	if err := h.command(ctx, "apt-get", "install", "-y", "-qq", "-t", "trixie", "docker.io"); err != nil {
		return runtime.EngineInfo{}, err
	}
	if running != "" {
		if err := h.stop(running, "dockerd", time.Minute); err != nil {
			return runtime.EngineInfo{}, err
		}
	}
	info, err := h.startDockerd(ctx)
	if err == nil {
		h.logf("engine now: %s %s", info.Version, info.Endpoint)
	}
	return info, err
}
