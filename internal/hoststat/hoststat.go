// Package hoststat reads what the host's kernel says about its memory and
// CPUs: the memory available now (/proc/meminfo) and the CPU time spent
// since boot, busy and in all (/proc/stat). The image factory sizes its
// parallel steps by the first; the benchmarks (bench/) report both for the
// whole machine, the engine's and the containers' work included.
//
// Not a library's: gopsutil reads the same two files but brings a
// module tree of its own for two fields.
package hoststat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// UserHZ is the unit of /proc/stat's counters: Linux reports them in
// USER_HZ, 100 per second on every architecture it builds for.
const UserHZ = 100

// MemAvailable returns the kernel's estimate of the memory available for
// new work without swapping (MemAvailable), in bytes.
func MemAvailable() (int64, error) { return memInfo("MemAvailable") }

// MemTotal returns the host's usable memory (MemTotal), in bytes.
func MemTotal() (int64, error) { return memInfo("MemTotal") }

func memInfo(key string) (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	if n := parseMemInfo(string(data), key); n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("/proc/meminfo has no %s line", key)
}

// ParseMemAvailable returns MemAvailable from /proc/meminfo's text, in
// bytes, or 0.
func ParseMemAvailable(meminfo string) int64 { return parseMemInfo(meminfo, "MemAvailable") }

// parseMemInfo returns key's value from /proc/meminfo's text, in bytes,
// or 0.
func parseMemInfo(meminfo, key string) int64 {
	for _, line := range strings.Split(meminfo, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == key+":" && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// CPUTicks is the CPU time of all CPUs since boot, in UserHZ ticks: Busy
// is everything but idle and iowait.
type CPUTicks struct{ Busy, Total uint64 }

// CPU reads the host's CPU time.
func CPU() (CPUTicks, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTicks{}, err
	}
	return ParseCPU(string(data))
}

// ParseCPU reads the summed "cpu" line of /proc/stat's text.
func ParseCPU(stat string) (CPUTicks, error) {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "cpu" {
			continue
		}
		var t CPUTicks
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return CPUTicks{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			t.Total += v
			if i != 3 && i != 4 { // idle, iowait
				t.Busy += v
			}
		}
		return t, nil
	}
	return CPUTicks{}, fmt.Errorf("/proc/stat has no cpu line")
}

// Since returns the busy CPU seconds from start to t, and how many of ncpu
// CPUs were busy on average.
func (t CPUTicks) Since(start CPUTicks, ncpu int) (busySeconds, cpusBusy float64) {
	busy, total := float64(t.Busy-start.Busy), float64(t.Total-start.Total)
	if total <= 0 {
		return busy / UserHZ, 0
	}
	return busy / UserHZ, float64(ncpu) * busy / total
}
