package enginesetup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Podman's service and its settings (docs/podman.md).
const (
	// PodmanConf is the drop-in with the settings Podman needs here.
	PodmanConf = "/etc/containers/containers.conf.d/50-capd-e2e.conf"
	// PodmanSocket is rootful Podman's standard path.
	PodmanSocket  = "/run/podman/podman.sock"
	PodmanPidFile = "/run/capd-e2e-podman.pid"
	PodmanLog     = "/var/log/capd-e2e-podman.log"
)

// PodmanSettings is PodmanConf's content for this host:
//   - default_ulimits: nofile at this host's hard limit, nproc 4096.
//     Podman's defaults (nofile 1048576) exceed the hard limits of hosts
//     without CAP_SYS_RESOURCE, so every container that sets none (kind's
//     nodes, CAPD's machines and load balancers) fails with "error
//     setting rlimit type 7".
//   - pids_limit = 0: Podman caps each container at 2048 pids by
//     default; a kind node running a management cluster's controllers,
//     or a CAPD machine, counts every thread against it.
//   - cgroup_manager = "cgroupfs", events_logger = "file": the defaults
//     assume systemd, which this host (and most CI containers) does not
//     run as PID 1.
func PodmanSettings(nofileHard uint64) string {
	if nofileHard == 0 || nofileHard == ^uint64(0) { // unlimited
		nofileHard = 1 << 20
	}
	return fmt.Sprintf(`# Written by capd-e2e (capd-e2e engine podman, %s);
# docs/podman.md says why. Remove this file to undo.
[containers]
default_ulimits = ["nofile=%d:%d", "nproc=4096:4096"]
pids_limit = 0

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
`, EnvFix, nofileHard, nofileHard)
}

func nofileHard() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Max
}

// CheckPodman checks (under the opt-in, applies) Podman's host settings:
// PodmanConf, and a /lib/modules to bind-mount. It reports whether it
// wrote PodmanConf: a running service needs a restart for it.
func (h *Host) CheckPodman() (changed bool, err error) {
	var errs []error
	// kind's nodes and CAPD's machines bind-mount /lib/modules read-only.
	// Docker creates a missing bind source; Podman refuses it ("statfs
	// /lib/modules: no such file or directory"), and hosts that boot a
	// kernel from outside (VMs, CI sandboxes) have none. An empty folder
	// is what Docker would have made.
	if _, err := os.Stat(h.path("/lib/modules")); err != nil {
		if !h.Mode.Fix {
			errs = append(errs, fmt.Errorf("/lib/modules does not exist: Podman will not bind-mount it into kind's nodes and CAPD's machines (Docker creates it); create it (mkdir -p /lib/modules), or rerun with %s=true", EnvFix))
		} else if err := os.MkdirAll(h.path("/lib/modules"), 0o755); err != nil {
			errs = append(errs, err)
		} else {
			h.logf("created an empty /lib/modules, as Docker would for the bind mount (%s)", EnvFix)
		}
	}
	want := PodmanSettings(nofileHard())
	if got, err := os.ReadFile(h.path(PodmanConf)); err != nil || string(got) != want {
		if !h.Mode.Fix {
			errs = append(errs, fmt.Errorf("podman here needs these settings in %s (docs/podman.md; then restart the service):\n%s\nwrite them yourself, or rerun with %s=true to have them written", PodmanConf, want, EnvFix))
		} else if err := os.MkdirAll(filepath.Dir(h.path(PodmanConf)), 0o755); err != nil {
			errs = append(errs, err)
		} else if err := os.WriteFile(h.path(PodmanConf), []byte(want), 0o644); err != nil {
			errs = append(errs, err)
		} else {
			h.logf("wrote %s (%s)", PodmanConf, EnvFix)
			changed = true
		}
	}
	return changed, errors.Join(errs...)
}

// EnsurePodman makes rootful Podman's Docker-API service ready: Debian's
// podman installed if missing, its host settings checked (applied under
// the opt-in), the service started at PodmanSocket unless one answers
// there. It returns the DOCKER_HOST that reaches it.
func (h *Host) EnsurePodman(ctx context.Context) (string, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		h.logf("installing Debian's podman")
		if err := h.command(ctx, "apt-get", "update", "-qq"); err != nil {
			return "", err
		}
		if err := h.command(ctx, "apt-get", "install", "-y", "-qq", "podman"); err != nil {
			return "", err
		}
	}
	if os.Geteuid() != 0 {
		return "", errors.New("run as root: the E2E needs rootful Podman (a rootless one cannot run CAPD's privileged, nested machines here)")
	}
	changed, err := h.CheckPodman()
	if err != nil {
		return "", err
	}
	host := "unix://" + PodmanSocket
	if _, ours := h.process(PodmanPidFile, "podman"); changed && ours {
		h.logf("restarting the Podman service capd-e2e started, for the new settings")
		if err := h.StopPodman(); err != nil {
			return "", err
		}
	}
	info, err := h.engine(ctx, host)
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(h.path(PodmanSocket)), 0o755); err != nil {
			return "", err
		}
		_ = os.Remove(h.path(PodmanSocket)) // a stale socket
		ready := func() bool {
			info, err = h.engine(ctx, host)
			return err == nil
		}
		if err := h.startDaemon(ctx, PodmanPidFile, PodmanLog, 30*time.Second, ready, "podman", "system", "service", "--time=0", host); err != nil {
			return "", err
		}
		pid, _ := h.process(PodmanPidFile, "podman")
		h.logf("started the Podman service (pid %d, log %s)", pid, PodmanLog)
	} else if changed {
		h.logf("warning: a Podman service capd-e2e did not start answers at %s: restart it for the new settings", host)
	}
	if !info.Podman {
		return "", fmt.Errorf("%s answers as %s %s, not Podman", host, "docker", info.Version)
	}
	h.logf("podman %s at %s", info.Version, host)
	return host, nil
}

// StopPodman stops the Podman service EnsurePodman started, if it runs;
// never another.
func (h *Host) StopPodman() error {
	return h.stop(PodmanPidFile, "podman", 30*time.Second)
}
