package runtime

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestExitErrorNamesCommandAndStderr(t *testing.T) {
	err := &ExitError{Container: "m1", Cmd: []string{"crictl", "ps"}, ExitCode: 2, Stderr: []byte(strings.Repeat("x", 5000) + "the reason\n")}
	msg := err.Error()
	for _, want := range []string{`"crictl ps"`, `"m1"`, "code 2", "the reason"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if len(msg) > 2300 {
		t.Errorf("stderr not truncated: %d bytes", len(msg))
	}
}

func TestHostPort(t *testing.T) {
	d := ContainerDetails{Ports: []PortBinding{{ContainerPort: 6443, Protocol: "udp", HostPort: 1}, {ContainerPort: 6443, Protocol: "tcp", HostPort: 32768}}}
	if got := d.HostPort(6443); got != 32768 {
		t.Errorf("HostPort(6443) = %d", got)
	}
	if got := d.HostPort(80); got != 0 {
		t.Errorf("HostPort(80) = %d", got)
	}
}

func TestRunLabels(t *testing.T) {
	extra := map[string]string{"a": "b", LabelRunID: "overridden"}
	l := RunLabels("r1", "suite", extra)
	if l[LabelRunID] != "r1" || l[LabelCreatedBy] != "suite" || l["a"] != "b" {
		t.Errorf("labels = %v", l)
	}
	// The creating process, so that what a killed test left is found.
	if alive, known := OwnerState(l[LabelOwner]); !alive || !known {
		t.Errorf("owner %q of this process: alive %v, known %v", l[LabelOwner], alive, known)
	}
	if l := RunLabels("r1", "", map[string]string{LabelOwner: "elsewhere/1/1"}); l[LabelOwner] != "elsewhere/1/1" {
		t.Errorf("an owner given is replaced: %v", l)
	}
	host, _ := os.Hostname()
	self := ProcessOwner()
	_, ns, pid, start, _ := ParseOwner(self)
	for owner, want := range map[string][2]bool{
		OwnerOf(999999999, 1):                                                  {false, true},  // no such pid
		OwnerOf(pid, start+1):                                                  {false, true},  // its pid, reused
		"elsewhere/" + strconv.FormatUint(ns, 10) + "/1/1":                     {false, false}, // another host: cannot tell
		host + "/1/" + strconv.Itoa(pid) + "/" + strconv.FormatUint(start, 10): {false, false}, // its pid in another PID namespace: cannot tell
		OwnerOf(pid, 0):                                                        {false, false}, // a process that could not read its start time
		host + "/" + strconv.Itoa(pid) + "/" + strconv.FormatUint(start, 10):   {false, false}, // without a namespace
		"garbage": {false, false},
	} {
		if alive, known := OwnerState(owner); alive != want[0] || known != want[1] {
			t.Errorf("OwnerState(%q) = %v, %v; want %v", owner, alive, known, want)
		}
	}
	if extra[LabelRunID] != "overridden" {
		t.Error("RunLabels modified its argument")
	}
	if a, b := NewRunID(), NewRunID(); a == b || len(a) != 12 {
		t.Errorf("run ids %q %q", a, b)
	}
}

type scripted struct {
	Containers
	code   int
	stdout string
	stderr string
	err    error
}

func (s scripted) Exec(_ context.Context, _ string, o ExecOptions) (ExecResult, error) {
	_, _ = io.WriteString(o.Stdout, s.stdout)
	_, _ = io.WriteString(o.Stderr, s.stderr)
	return ExecResult{ExitCode: s.code}, s.err
}

func TestOutput(t *testing.T) {
	out, err := Output(context.Background(), scripted{stdout: "ok\n"}, "c", "true")
	if err != nil || string(out) != "ok\n" {
		t.Errorf("Output = %q, %v", out, err)
	}
	_, err = Output(context.Background(), scripted{code: 3, stderr: "boom"}, "c", "false")
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 3 || string(ee.Stderr) != "boom" {
		t.Errorf("Output error = %v", err)
	}
	sentinel := errors.New("stream broke")
	if _, err = Output(context.Background(), scripted{err: sentinel}, "c", "x"); !errors.Is(err, sentinel) {
		t.Errorf("Output error = %v", err)
	}
}

func TestEngineInfoSocketPath(t *testing.T) {
	for _, tc := range []struct {
		endpoint, want string
		ok             bool
	}{
		{"unix:///var/run/docker.sock", "/var/run/docker.sock", true},
		{"unix:///run/podman/podman.sock", "/run/podman/podman.sock", true},
		{"tcp://10.0.0.1:2376", "", false},
		{"unix://", "", false},
		{"", "", false},
	} {
		got, err := EngineInfo{Endpoint: tc.endpoint}.SocketPath()
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, ok %v", tc.endpoint, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tc.endpoint) {
			t.Errorf("SocketPath(%q) error %q does not name the endpoint", tc.endpoint, err)
		}
	}
	if p := (EngineInfo{Podman: true, Version: "4.3.1"}).Product(); p != "Podman 4.3.1" {
		t.Errorf("Product = %q", p)
	}
}
