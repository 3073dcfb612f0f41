package cputime

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

func TestRunAddsTheCommandsCPUTime(t *testing.T) {
	ctx, m := With(context.Background())
	// A busy loop in a child of the shell: the shell waits for it, so its
	// CPU time is the shell's too.
	cmd := exec.Command("sh", "-c", `sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'`)
	if err := Run(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	got := m.Total()
	if got < 50*time.Millisecond {
		t.Fatalf("Total() = %s after a busy loop, want at least 50ms", got)
	}
	if want := Process(cmd.ProcessState); got != want {
		t.Errorf("Total() = %s, want the process's %s", got, want)
	}
	// A failed command counts too.
	if err := Run(ctx, exec.Command("sh", "-c", "exit 3")); err == nil {
		t.Fatal("Run of exit 3: no error")
	}
	if m.Total() < got {
		t.Errorf("Total() went down: %s, then %s", got, m.Total())
	}
}

func TestWithoutMeter(t *testing.T) {
	ctx := context.Background()
	if From(ctx) != nil {
		t.Fatal("From of a bare context: not nil")
	}
	Add(ctx, time.Second) // must not panic
	if err := Run(ctx, exec.Command("true")); err != nil {
		t.Fatal(err)
	}
	var m *Meter
	m.Add(time.Second)
	if m.Total() != 0 {
		t.Errorf("nil Meter's Total() = %s", m.Total())
	}
	if Process(nil) != 0 {
		t.Error("Process(nil) != 0")
	}
}

func TestParseCgroup(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"123456789\n": 123456789,
		"0":           0,
	} {
		got, err := ParseCgroup(in)
		if err != nil || got != want {
			t.Errorf("ParseCgroup(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "cat: /sys/fs/cgroup/cpu.stat: No such file", "12 34"} {
		if _, err := ParseCgroup(in); err == nil {
			t.Errorf("ParseCgroup(%q): no error", in)
		}
	}
}

func TestCgroupScriptHere(t *testing.T) {
	// The script reads this host's own cgroup as it reads a container's:
	// on either cgroup version it prints a number.
	out, err := exec.Command("sh", "-c", CgroupScript).Output()
	if err != nil {
		t.Fatalf("CgroupScript: %v (%q)", err, out)
	}
	if d, err := ParseCgroup(string(out)); err != nil || d <= 0 {
		t.Fatalf("CgroupScript printed %q: %s, %v", out, d, err)
	}
}
