package runtime

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// LabelOwner says which process created an object (RunLabels puts it on
// every object) or owns a run (the run's markers, framework/leak):
// "<host>/<pidns>/<pid>/<start>": the host name, the inode of the
// process's PID namespace (/proc/self/ns/pid), its pid there, and its
// start time in clock ticks since boot (/proc/<pid>/stat), so that a
// reused pid is not taken for it. `make clean-e2e` removes the objects of
// a run without markers (an integration test killed outright) once their
// owners are gone.
const LabelOwner = "e2e.capd.x-k8s.io/owner"

// ProcessOwner is this process as LabelOwner spells it. When its start
// time cannot be read, it is 0, which OwnerState never judges.
var ProcessOwner = sync.OnceValue(func() string {
	start, err := processStart(os.Getpid())
	if err != nil {
		start = 0
	}
	return OwnerOf(os.Getpid(), start)
})

// OwnerOf spells process pid of this host and PID namespace, started at
// start, as LabelOwner says.
func OwnerOf(pid int, start uint64) string {
	host, _ := os.Hostname() // empty: no other process matches it, so none is judged
	return fmt.Sprintf("%s/%d/%d/%d", host, pidNamespace(), pid, start)
}

// OwnerState says whether owner (LabelOwner's value) still runs. known is
// false when that cannot be told from here: the owner is of another host
// or another PID namespace (a process in a container, another machine),
// its start time was not known (0), or it is not spelled as LabelOwner
// says. Callers reap only what is known to be dead.
func OwnerState(owner string) (alive, known bool) {
	host, ns, pid, start, ok := ParseOwner(owner)
	if !ok || start == 0 || ns == 0 || ns != pidNamespace() {
		return false, false
	}
	if h, err := os.Hostname(); err != nil || host != h {
		return false, false
	}
	got, err := processStart(pid)
	if err != nil && !os.IsNotExist(err) {
		return false, false // unreadable, not gone
	}
	return err == nil && got == start, true
}

// ParseOwner splits LabelOwner's value.
func ParseOwner(owner string) (host string, pidns uint64, pid int, start uint64, ok bool) {
	parts := strings.Split(owner, "/")
	if len(parts) != 4 {
		return "", 0, 0, 0, false
	}
	ns, err1 := strconv.ParseUint(parts[1], 10, 64)
	pid, err2 := strconv.Atoi(parts[2])
	start, err3 := strconv.ParseUint(parts[3], 10, 64)
	return parts[0], ns, pid, start, err1 == nil && err2 == nil && err3 == nil
}

// pidNamespace is the inode of this process's PID namespace, or 0.
var pidNamespace = sync.OnceValue(func() uint64 {
	link, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]"), 10, 64)
	if err != nil {
		return 0
	}
	return n
})

// processStart returns a process's start time in clock ticks since boot
// (field 22 of /proc/<pid>/stat).
func processStart(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after its ")".
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
