package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func cluster(f *fake.Runtime) {
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{
		ID: "0123456789abcdef0123", Name: "c1-control-plane-x", Image: "kindest/node:v1.36.3",
		Labels:   map[string]string{runtime.LabelCluster: "c1", runtime.LabelRole: "control-plane"},
		State:    runtime.ContainerState{Status: "running", Running: true, StartedAt: t0.Add(-3 * time.Minute)},
		Networks: map[string]runtime.NetworkEndpoint{"kind": {IPv4: "172.18.0.3", IPv6: "fc00:f853::3"}},
		Ports:    []runtime.PortBinding{{ContainerPort: 6443, Protocol: "tcp", HostIP: "127.0.0.1", HostPort: 32768}},
	}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{
		ID: "md0", Name: "c1-md-0-y", Image: "kindest/node:v1.36.3", RestartCount: 2,
		Labels: map[string]string{runtime.LabelCluster: "c1", runtime.LabelRole: "worker"},
		State: runtime.ContainerState{Status: "exited", ExitCode: 137, OOMKilled: true,
			StartedAt: t0.Add(-2 * time.Minute), FinishedAt: t0.Add(-90 * time.Second)},
		Networks: map[string]runtime.NetworkEndpoint{"kind": {}},
	}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{
		ID: "lb", Name: "c1-lb", Image: "kindest/haproxy:v20230606-42a2262b",
		Labels: map[string]string{runtime.LabelCluster: "c1", runtime.LabelRole: "external-load-balancer"},
		State:  runtime.ContainerState{Status: "created", Error: "port is already allocated"},
	}})
	// Not part of c1: another cluster whose name shares the prefix, and a
	// stray container named like c1's.
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{
		Name: "c10-control-plane", Labels: map[string]string{runtime.LabelCluster: "c10"}}})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "c1-stray"}})
}

func names(s Snapshot) []string {
	var out []string
	for _, c := range s.Containers {
		out = append(out, c.Name)
	}
	return out
}

func TestTakeSelects(t *testing.T) {
	t.Parallel()
	f := fake.New()
	cluster(f)
	for _, tc := range []struct {
		filter Filter
		want   string
	}{
		{Filter{Cluster: "c1"}, "c1-control-plane-x c1-lb c1-md-0-y"},
		{Filter{NamePrefix: "c1-"}, "c1-control-plane-x c1-lb c1-md-0-y c1-stray"},
		{Filter{Cluster: "c1", NamePrefix: "c1-md"}, "c1-md-0-y"},
		{Filter{Labels: map[string]string{runtime.LabelRole: "worker"}}, "c1-md-0-y"},
		{Filter{NamePrefix: "c1.*"}, ""}, // a prefix, not a pattern
	} {
		s, err := Take(t.Context(), f, tc.filter)
		if err != nil {
			t.Errorf("Take(%s): %v", tc.filter, err)
		}
		if got := strings.Join(names(s), " "); got != tc.want {
			t.Errorf("Take(%s) = %q, want %q", tc.filter, got, tc.want)
		}
	}
	if _, err := Take(t.Context(), f, Filter{}); err == nil {
		t.Error("empty filter: want an error")
	}
}

func TestTakeFields(t *testing.T) {
	t.Parallel()
	f := fake.New()
	cluster(f)
	s, err := Take(t.Context(), f, Filter{Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	md := s.Containers[2]
	if md.Name != "c1-md-0-y" || md.Role != "worker" || md.State != "exited" || md.Running || md.ExitCode != 137 ||
		!md.OOMKilled || md.Restarts != 2 || md.Image != "kindest/node:v1.36.3" || md.Labels[runtime.LabelCluster] != "c1" {
		t.Errorf("worker = %+v", md)
	}
	cp := s.Containers[0]
	if cp.Networks["kind"].IPv4 != "172.18.0.3" || len(cp.Ports) != 1 || cp.Ports[0].HostPort != 32768 {
		t.Errorf("control plane = %+v", cp)
	}
}

// inspectFails wraps the fake so that one container vanishes between the
// listing and its inspect.
type inspectFails struct {
	*fake.Runtime
	name string
}

func (r inspectFails) InspectContainer(ctx context.Context, nameOrID string) (runtime.ContainerDetails, error) {
	if nameOrID == r.name {
		return runtime.ContainerDetails{}, fmt.Errorf("inspect container %q: %w", nameOrID, runtime.ErrNotFound)
	}
	return r.Runtime.InspectContainer(ctx, nameOrID)
}

func TestTakeKeepsGoingWhenAContainerVanishes(t *testing.T) {
	t.Parallel()
	f := fake.New()
	cluster(f)
	s, err := Take(t.Context(), inspectFails{f, "lb"}, Filter{Cluster: "c1"})
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("error = %v, want it to wrap ErrNotFound", err)
	}
	if got := strings.Join(names(s), " "); got != "c1-control-plane-x c1-md-0-y" {
		t.Errorf("containers = %q", got)
	}
	if len(s.Errors) != 1 || !strings.Contains(s.Errors[0], `"c1-lb"`) {
		t.Errorf("Errors = %q", s.Errors)
	}
}

func TestWriteTable(t *testing.T) {
	t.Parallel()
	f := fake.New()
	cluster(f)
	s, err := Take(t.Context(), f, Filter{Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	s.TakenAt = t0
	s.Errors = []string{`inspect container "c1-gone": not found`}
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `Containers of cluster "c1" at 2026-11-30T12:00:00Z: 3

NAME                ROLE                    STATE    EXIT  OOM  RESTARTS  SINCE          IMAGE                               ADDRESSES                     PORTS
c1-control-plane-x  control-plane           running  -     -    0         up 3m0s        kindest/node:v1.36.3                kind=172.18.0.3,fc00:f853::3  6443/tcp->127.0.0.1:32768
c1-lb               external-load-balancer  created  -     -    0         never started  kindest/haproxy:v20230606-42a2262b  -                             -
c1-md-0-y           worker                  exited   137   yes  2         down 1m30s     kindest/node:v1.36.3                kind=no address               -

c1-control-plane-x (0123456789ab)
  created:  -
  started:  2026-11-30T11:57:00Z
  labels:
    io.x-k8s.kind.cluster=c1
    io.x-k8s.kind.role=control-plane

c1-lb (lb)
  error:    port is already allocated
  created:  -
  started:  -
  finished: -
  labels:
    io.x-k8s.kind.cluster=c1
    io.x-k8s.kind.role=external-load-balancer

c1-md-0-y (md0)
  created:  -
  started:  2026-11-30T11:58:00Z
  finished: 2026-11-30T11:58:30Z
  labels:
    io.x-k8s.kind.cluster=c1
    io.x-k8s.kind.role=worker

Not inspected:
  inspect container "c1-gone": not found
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestSave(t *testing.T) {
	t.Parallel()
	f := fake.New()
	cluster(f)
	s, err := Take(t.Context(), f, Filter{Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "clusters", "c1")
	if err := s.Save(dir); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, TableFile))
	if err != nil || !strings.Contains(string(table), "c1-md-0-y") {
		t.Errorf("table file: %v\n%s", err, table)
	}
	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Containers) != 3 || back.Containers[2].ExitCode != 137 || !back.Containers[2].OOMKilled ||
		back.Filter.Cluster != "c1" || back.Containers[0].Networks["kind"].IPv4 != "172.18.0.3" {
		t.Errorf("JSON round trip = %+v", back)
	}
	for _, key := range []string{`"oomKilled": true`, `"exitCode": 137`, `"restarts": 2`, `"role": "worker"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}
