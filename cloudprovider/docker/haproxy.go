package docker

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// HAProxyConfigPath is where the load balancer image's haproxy reads its
// configuration: the path CAPD writes to (CAPD v1.14.2
// internal/loadbalancer ConfigPath), which the harness's image
// (factory/nodeimage HAProxyConfigPath) starts haproxy with.
const HAProxyConfigPath = "/usr/local/etc/haproxy/haproxy.cfg"

// haproxyConfig is what one Service's load balancer serves.
type haproxyConfig struct {
	// Service ("namespace/name"), UID and Cluster go in the header comment.
	Service, UID, Cluster string
	// IPv4 and IPv6 say on which families to listen: the container's
	// addresses on the network.
	IPv4, IPv6 bool
	// Ports are the Service's ports, in the Service's order.
	Ports []haproxyPort
	// Servers are the nodes traffic goes to, sorted by name.
	Servers []haproxyServer
	// Skipped lists nodes left out, with why, as comments.
	Skipped []string
	// HealthCheckNodePort, if not zero, is where kube-proxy answers
	// GET /healthz with 200 only on nodes that have a ready endpoint
	// (externalTrafficPolicy: Local).
	HealthCheckNodePort int32
}

type haproxyPort struct {
	Port, NodePort int32
}

type haproxyServer struct {
	Name, Address string
}

// render writes the haproxy configuration: one frontend and one backend per
// Service port, each backend holding every node at the port's node port.
//
// The servers carry "check": haproxy probes each node (a TCP connect to the
// node port, or kube-proxy's health check for externalTrafficPolicy: Local)
// and sends nothing to nodes that fail it. That is how traffic reaches only
// ready nodes: the service controller passes NotReady nodes too and does not
// call again when readiness changes (KEP-3458), so a readiness filter here
// would go stale. maxconn is not set: the image's haproxy wrapper derives it
// from the container's open-file limit (Config.LoadBalancerUlimits).
//
// The checks keep haproxy's interval (inter 2s) for a server that is up but
// probe every 500 ms while a server is down or changing state (downinter,
// fastinter). haproxy starts every server of a new configuration as up; the
// first failed check takes it down, and two passing checks (rise 2) bring it
// back. A node added before its node port serves (kube-proxy not yet
// running, no endpoint yet) thus gets traffic 0.5-1 s after it begins to
// serve, instead of 2-4 s at haproxy's defaults (make bench-lb measures
// both), and a node that stops serving is taken down within 3 s (inter,
// then two fastinter: fall 3) instead of 6.
func (c haproxyConfig) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by capd-cloud-controller-manager: the load balancer of Service %s\n", c.Service)
	fmt.Fprintf(&b, "# (uid %s) in cluster %s. Changes made here are overwritten.\n", c.UID, c.Cluster)
	b.WriteString(`global
  # haproxy runs in the foreground (-db) and is reloaded with SIGHUP.
  hard-stop-after 30s

defaults
  mode tcp
  option dontlognull
  timeout connect 5s
  timeout client 50s
  timeout server 50s
  default-server inter 2s fastinter 500ms downinter 500ms
`)
	for _, s := range c.Skipped {
		fmt.Fprintf(&b, "\n# skipped node %s", s)
	}
	if len(c.Skipped) > 0 {
		b.WriteString("\n")
	}
	for _, p := range c.Ports {
		name := "tcp-" + strconv.Itoa(int(p.Port))
		fmt.Fprintf(&b, "\nfrontend %s\n", name)
		if c.IPv4 {
			fmt.Fprintf(&b, "  bind *:%d\n", p.Port)
		}
		if c.IPv6 {
			fmt.Fprintf(&b, "  bind :::%d v6only\n", p.Port)
		}
		fmt.Fprintf(&b, "  default_backend %s\n", name)
		fmt.Fprintf(&b, "\nbackend %s\n", name)
		check := "check"
		if c.HealthCheckNodePort != 0 {
			b.WriteString("  option httpchk GET /healthz\n")
			check = fmt.Sprintf("check port %d", c.HealthCheckNodePort)
		}
		for _, s := range c.Servers {
			fmt.Fprintf(&b, "  server %s %s %s\n", s.Name, net.JoinHostPort(s.Address, strconv.Itoa(int(p.NodePort))), check)
		}
	}
	return b.String()
}

// listeningPorts returns the TCP ports that have a listening socket in
// /proc/net/tcp or /proc/net/tcp6 content (state 0A).
func listeningPorts(procNetTCP string) map[int32]bool {
	out := map[int32]bool{}
	for _, line := range strings.Split(procNetTCP, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		if port, err := strconv.ParseInt(f[1][i+1:], 16, 32); err == nil {
			out[int32(port)] = true
		}
	}
	return out
}
