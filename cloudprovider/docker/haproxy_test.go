package docker

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

const header = `# Written by capd-cloud-controller-manager: the load balancer of Service default/web
# (uid 1234) in cluster c1. Changes made here are overwritten.
global
  # haproxy runs in the foreground (-db) and is reloaded with SIGHUP.
  hard-stop-after 30s

defaults
  mode tcp
  option dontlognull
  timeout connect 5s
  timeout client 50s
  timeout server 50s
  default-server inter 2s fastinter 500ms downinter 500ms
`

func TestRenderOnePortOneNode(t *testing.T) {
	got := haproxyConfig{
		Service: "default/web", UID: "1234", Cluster: "c1", IPv4: true,
		Ports:   []haproxyPort{{Port: 80, NodePort: 30080}},
		Servers: []haproxyServer{{Name: "c1-md-0", Address: "172.18.0.3"}},
	}.render()
	want := header + `
frontend tcp-80
  bind *:80
  default_backend tcp-80

backend tcp-80
  server c1-md-0 172.18.0.3:30080 check
`
	if got != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderTwoPortsThreeNodes(t *testing.T) {
	got := haproxyConfig{
		Service: "default/web", UID: "1234", Cluster: "c1", IPv4: true,
		Ports: []haproxyPort{{Port: 80, NodePort: 30080}, {Port: 443, NodePort: 30443}},
		Servers: []haproxyServer{
			{Name: "c1-cp-0", Address: "172.18.0.2"},
			{Name: "c1-md-0", Address: "172.18.0.3"},
			{Name: "c1-md-1", Address: "172.18.0.4"},
		},
		Skipped: []string{"c1-md-2: no IPv4 InternalIP"},
	}.render()
	want := header + `
# skipped node c1-md-2: no IPv4 InternalIP

frontend tcp-80
  bind *:80
  default_backend tcp-80

backend tcp-80
  server c1-cp-0 172.18.0.2:30080 check
  server c1-md-0 172.18.0.3:30080 check
  server c1-md-1 172.18.0.4:30080 check

frontend tcp-443
  bind *:443
  default_backend tcp-443

backend tcp-443
  server c1-cp-0 172.18.0.2:30443 check
  server c1-md-0 172.18.0.3:30443 check
  server c1-md-1 172.18.0.4:30443 check
`
	if got != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderNoNodes(t *testing.T) {
	got := haproxyConfig{
		Service: "default/web", UID: "1234", Cluster: "c1", IPv4: true,
		Ports: []haproxyPort{{Port: 80, NodePort: 30080}, {Port: 443, NodePort: 30443}},
	}.render()
	// haproxy accepts a backend without servers and refuses its connections.
	want := header + `
frontend tcp-80
  bind *:80
  default_backend tcp-80

backend tcp-80

frontend tcp-443
  bind *:443
  default_backend tcp-443

backend tcp-443
`
	if got != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderLocalTrafficPolicyAndIPv6(t *testing.T) {
	got := haproxyConfig{
		Service: "default/web", UID: "1234", Cluster: "c1", IPv6: true,
		Ports:               []haproxyPort{{Port: 80, NodePort: 30080}},
		Servers:             []haproxyServer{{Name: "c1-md-0", Address: "fc00::3"}},
		HealthCheckNodePort: 32000,
	}.render()
	for _, line := range []string{
		"  bind :::80 v6only\n",
		"  option httpchk GET /healthz\n",
		"  server c1-md-0 [fc00::3]:30080 check port 32000\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("config lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "bind *:") {
		t.Errorf("config binds IPv4 without an IPv4 address:\n%s", got)
	}
}

func TestListeningPorts(t *testing.T) {
	// Shortened /proc/net/tcp and tcp6 lines: listening on 80 (0050) and on
	// 443 (01BB) over IPv6, and a connection (01) from 6443.
	proc := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1
   1: 030012AC:192B 020012AC:D2F4 01 00000000:00000000 00:00000000 00000000     0        0 2
  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000
`
	got := slices.Sorted(maps.Keys(listeningPorts(proc)))
	if !slices.Equal(got, []int32{80, 443}) {
		t.Errorf("listening ports = %v, want [80 443]", got)
	}
}
