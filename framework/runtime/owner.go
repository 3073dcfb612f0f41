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
// "<host>/<pid>/<start>", where start is the process's start time in clock
// ticks since boot (/proc/<pid>/stat), so that a reused pid is not taken
// for it. `make clean-e2e` removes the objects of a run without markers
// (an integration test killed outright) once their owners are gone.
const LabelOwner = "e2e.capd.x-k8s.io/owner"

// ProcessOwner is this process as LabelOwner spells it.
var ProcessOwner = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	start, _ := processStart(os.Getpid())
	return fmt.Sprintf("%s/%d/%d", host, os.Getpid(), start)
})

// OwnerState says whether owner (LabelOwner's value) still runs. known is
// false when that cannot be told from here: the owner is of another host
// (a process in a container, another machine) or not spelled as LabelOwner
// says.
func OwnerState(owner string) (alive, known bool) {
	host, pid, start, ok := ParseOwner(owner)
	if !ok {
		return false, false
	}
	if h, _ := os.Hostname(); host != h {
		return false, false
	}
	got, err := processStart(pid)
	return err == nil && got == start, true
}

// ParseOwner splits LabelOwner's value.
func ParseOwner(owner string) (host string, pid int, start uint64, ok bool) {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	pid, err1 := strconv.Atoi(parts[1])
	start, err2 := strconv.ParseUint(parts[2], 10, 64)
	return parts[0], pid, start, err1 == nil && err2 == nil
}

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
