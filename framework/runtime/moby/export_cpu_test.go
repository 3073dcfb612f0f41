package moby

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CPU accounting for the exec benchmarks, read from /proc (Linux only). It
// is exported to the external test package through this _test.go file.

// clockTick is the unit of /proc/<pid>/stat times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// SelfCPU is the CPU time (user + system) this process has used.
func SelfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// EngineCPU is the CPU time used so far by the engine's processes that
// serve an exec in container containerID: dockerd and containerd (daemon),
// and that container's shim together with the children it has reaped
// (shim: runc, which it starts for every exec, runc's init, and the exec'd
// command, which the shim reaps as a subreaper; for cat, next to nothing).
// ok is false when they cannot be found (another engine, another PID
// namespace); the caller then reports nothing.
func EngineCPU(containerID string) (daemon, shim time.Duration, ok bool) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found int
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		isShim := strings.HasPrefix(name, "containerd-shim")
		switch {
		case name == "dockerd" || name == "containerd":
		case isShim:
			cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
			if !strings.Contains(string(cmdline), containerID) {
				continue
			}
		default:
			continue
		}
		t, ok := procCPU(d)
		if !ok {
			continue
		}
		found++
		if isShim {
			shim += t
		} else {
			daemon += t
		}
	}
	return daemon, shim, found >= 3
}

// procCPU reads utime, stime, cutime and cstime of /proc/<pid>.
func procCPU(dir string) (time.Duration, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces: fields start after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime..cstime are fields 14..17.
	if len(f) < 15 {
		return 0, false
	}
	var ticks int64
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, true
}
