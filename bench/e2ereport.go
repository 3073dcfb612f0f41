package bench

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// What an E2E run's report reads from its log and JUnit file.
var (
	suiteRan   = regexp.MustCompile(`Ran [0-9]+ of [0-9]+ Specs in [0-9.]+ seconds`)
	setupPhase = regexp.MustCompile(`(?m)setup: (.*) done in ([0-9.hmsµ]+)$`)
)

// E2EReport renders what one run of the E2E suite, its artifacts in dir and
// its output in log, says about where its time went: the suite's time,
// the setup phases, each spec's JUnit time, each cluster's phase table
// (summary.txt), the control planes' start (Connections), the nodes'
// BGP sessions (Peerings) and the log collectors' comparison.
func E2EReport(name, dir, log, failure string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", name)
	if failure != "" {
		fmt.Fprintf(&b, "**FAILED:** %s\n\n", failure)
	}
	text := ReadFile(log)
	if all := suiteRan.FindAllString(text, -1); len(all) > 0 {
		fmt.Fprintf(&b, "suite: %s\n\n", all[len(all)-1])
	}
	setup := Table{Header: []string{"setup phase", "time"}}
	for _, m := range setupPhase.FindAllStringSubmatch(text, -1) {
		setup.Add(m[1], m[2])
	}
	b.WriteString(setup.String() + "\n")
	specs := Table{Header: []string{"spec (JUnit)", "status", "time s"}}
	for _, f := range Glob(filepath.Join(dir, "junit*.xml")) {
		cases, err := junitCases(f)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n\n", f, err)
			continue
		}
		for _, c := range cases {
			if !strings.HasPrefix(c.Name, "[It] ") || c.Status == "skipped" || c.Time == "0" {
				continue // the suite's own nodes ([SynchronizedBeforeSuite], ...), and specs that did not run
			}
			specs.Add(c.Name, c.Status, c.Time)
		}
	}
	b.WriteString(specs.String())
	for _, f := range Glob(filepath.Join(dir, "clusters", "*", "summary.txt")) {
		fmt.Fprintf(&b, "\n```\n%s```\n", ReadFile(f))
	}
	clusters := WorkloadClusters(dir)
	b.WriteString("\n" + Connections(dir, clusters).String())
	b.WriteString("\n" + Peerings(clusters).String())
	for _, f := range Glob(filepath.Join(dir, "comparison", "log-collectors", "*", "comparison.txt")) {
		lines := strings.SplitAfterN(ReadFile(f), "\n", 5)
		fmt.Fprintf(&b, "\n```\n%s```\n", strings.Join(lines[:min(4, len(lines))], ""))
	}
	return b.String() + "\n"
}

type junitCase struct {
	Name   string `xml:"name,attr"`
	Status string `xml:"status,attr"`
	Time   string `xml:"time,attr"`
}

func junitCases(path string) ([]junitCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var out []junitCase
	for _, s := range doc.Suites {
		out = append(out, s.Cases...)
	}
	return out, nil
}

// Cluster is a workload cluster whose logs a run collected.
type Cluster struct {
	Dir  string // its folder, with machines/ under it
	Name string // for the tables
}

// WorkloadClusters lists the workload clusters of a run's artifacts: ours
// under clusters/, upstream's spec's under
// comparison/upstream-quick-start/clusters/.
func WorkloadClusters(dir string) []Cluster {
	var out []Cluster
	for _, pat := range []string{"clusters/*", "comparison/upstream-quick-start/clusters/*"} {
		for _, d := range Glob(filepath.Join(dir, pat)) {
			base := filepath.Base(d)
			if fi, err := os.Stat(filepath.Join(d, "machines")); base == "bootstrap" || err != nil || !fi.IsDir() {
				continue
			}
			name := base
			if strings.Contains(pat, "upstream") {
				name += " (upstream's spec)"
			}
			out = append(out, Cluster{Dir: d, Name: name})
		}
	}
	return out
}

var (
	waitInitialized = regexp.MustCompile(`(?m)^ *\+\S+ +(\S+) +[a-z]+ +wait for control plane initialized$`)
	servingSecurely = regexp.MustCompile(`(?m)^[0-9-]+T([0-9:]+\.[0-9])[0-9]*Z .*Serving securely`)
	firstLogTime    = regexp.MustCompile(`^[0-9-]+T([0-9:]+\.[0-9])`)
	podCgroupError  = regexp.MustCompile(`^[A-Z][a-z]+ [0-9]+ ([0-9:]+\.[0-9]).* pod="([^"]*)"`)
	noKubeconfig    = regexp.MustCompile(`kubeconfig secret.*not found`)
	cacheConnect    = regexp.MustCompile(`"(Connect failed|Connected)".* Cluster="[^"]*/([^"]*)"`)
)

// Connections tables, for each workload cluster, when KCP's cluster cache
// tried to connect to it and with what result, against when its first
// kube-apiserver logged "Serving securely". CAPI's cluster cache retries a
// failed connection only after 30 s (ConnectionCreationRetryInterval, no
// flag), so "wait for control plane initialized" moves in steps of 30 s
// with the control plane's start; this table shows which step each
// cluster took, and where the first control plane's start went: when CAPD
// ran kubeadm init, when etcd logged its first line, and the kubelet's
// "cgroups exist and are correctly applied" errors, after each of which it
// retries the pod about 10 s later (on cgroup v1 a pod slice's mkdir can
// race systemd; kubernetes/kubernetes#103542). Times are UTC.
func Connections(dir string, clusters []Cluster) Table {
	t := Table{Header: []string{"cluster", "KCP cluster-cache connection attempts (logged as each ends)", "kubeadm init run",
		"etcd first log line", `first kube-apiserver "Serving securely"`, "kubelet pod cgroup errors", "wait for control plane initialized"}}
	kcp := lines(first(Glob(filepath.Join(dir, "clusters/bootstrap/logs/capi-kubeadm-control-plane-system/*/*/manager.log"))))
	capd := lines(first(Glob(filepath.Join(dir, "clusters/bootstrap/logs/capd-system/*/*/manager.log"))))
	for _, c := range clusters {
		base := filepath.Base(c.Dir)
		wait := "-"
		if m := waitInitialized.FindStringSubmatch(ReadFile(filepath.Join(c.Dir, "summary.txt"))); m != nil {
			wait = m[1]
		}
		// The control plane's machines are those that ran a kube-apiserver
		// (a topology cluster's machine names do not say).
		var cps []string
		for _, m := range Glob(filepath.Join(c.Dir, "machines", "*")) {
			if len(Glob(filepath.Join(m, "pods", "kube-system_kube-apiserver-*"))) > 0 {
				cps = append(cps, m)
			}
		}
		var api, etcd, cgroup []string
		init := "?"
		for _, m := range cps {
			for _, f := range Glob(filepath.Join(m, "pods/kube-system_kube-apiserver-*/*/*.log")) {
				for _, mm := range servingSecurely.FindAllStringSubmatch(ReadFile(f), -1) {
					api = append(api, mm[1])
				}
			}
			for _, f := range Glob(filepath.Join(m, "pods/kube-system_etcd-*/etcd/0.log")) {
				if l := lines(f); len(l) > 0 {
					if mm := firstLogTime.FindStringSubmatch(l[0]); mm != nil {
						etcd = append(etcd, mm[1])
					}
				}
			}
			for _, l := range lines(filepath.Join(m, "kubelet.log")) {
				if mm := podCgroupError.FindStringSubmatch(l); mm != nil && strings.Contains(l, "cgroups exist and are correctly applied") {
					pod, _, _ := strings.Cut(mm[2], "-"+filepath.Base(m))
					cgroup = append(cgroup, pod+" "+mm[1])
				}
			}
			for _, l := range capd {
				if init == "?" && strings.Contains(l, "kubeadm init") && strings.Contains(l, "/"+filepath.Base(m)+`"`) {
					init = klogTime(l)
				}
			}
		}
		var attempts []string
		for _, l := range kcp {
			m := cacheConnect.FindStringSubmatch(l)
			if m == nil || m[2] != base {
				continue
			}
			r := "failed"
			switch {
			case m[1] == "Connected":
				r = "connected"
			case noKubeconfig.MatchString(l):
				r = "failed, no kubeconfig Secret yet"
			case strings.Contains(l, "not reachable"):
				r = "failed, not reachable"
			}
			attempts = append(attempts, klogTime(l)+" "+r)
		}
		t.Add(c.Name, strings.Join(attempts, "; "), init, earliest(etcd), earliest(api), orNone(strings.Join(cgroup, ";")), wait)
	}
	return t
}

// Peerings tables, for each machine of each workload cluster, when its
// kubelet registered the Node, when its kube-router started, and when that
// kube-router added each BGP peer and brought the session up: until a
// session is up, pods on the two nodes cannot reach each other.
// kube-router peers with a node at the Node's add event only if it has an
// address then, which with an external cloud provider it has not yet, so
// the peer comes at its next periodic sync; GoBGP then waits 5-10 s
// before its first connect, and a connect from a node the other side has
// not added yet is refused (logged by the refusing side) and retried only
// after GoBGP's connect-retry (120 s). Times UTC.
func Peerings(clusters []Cluster) Table {
	t := Table{Header: []string{"cluster", "machine (its IP)", "Node registered", "kube-router started",
		"peers added (peer IP at)", "connects refused (peer IP at)", "sessions up (peer IP at)"}}
	for _, c := range clusters {
		for _, m := range Glob(filepath.Join(c.Dir, "machines", "*")) {
			reg := "?"
			for _, l := range lines(filepath.Join(m, "kubelet.log")) {
				if strings.Contains(l, "Successfully registered node") {
					if f := strings.Fields(l); len(f) > 2 {
						reg = f[2][:min(10, len(f[2]))]
					}
					break
				}
			}
			kr := lines(first(Glob(filepath.Join(m, "pods/kube-system_kube-router-*/kube-router/*.log"))))
			started := "?"
			if len(kr) > 0 {
				if mm := firstLogTime.FindStringSubmatch(kr[0]); mm != nil {
					started = mm[1]
				}
			}
			t.Add(c.Name, fmt.Sprintf("%s (%s)", filepath.Base(m), machineIP(filepath.Join(m, "inspect.json"))), reg, started,
				gobgpEvents(kr, "Add a peer configuration"), gobgpEvents(kr, "Can't find configuration for a new passive connection"),
				gobgpEvents(kr, "Peer Up"))
		}
	}
	return t
}

var gobgpKey = regexp.MustCompile(`^[0-9-]+T([0-9:]+\.[0-9]).* Key=(\S+)`)

// gobgpEvents lists "<peer IP> <time>" for each line of kube-router's log
// where GoBGP logged msg.
func gobgpEvents(log []string, msg string) string {
	var out []string
	for _, l := range log {
		if strings.Contains(l, `msg="`+msg+`"`) {
			if m := gobgpKey.FindStringSubmatch(l); m != nil {
				out = append(out, m[2]+" "+m[1])
			}
		}
	}
	return strings.Join(out, ";")
}

// machineIP reads a machine's first IP address from its saved inspect.
func machineIP(path string) string {
	var d struct {
		NetworkSettings struct {
			Networks map[string]struct{ IPAddress string }
		}
	}
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &d) != nil {
		return "?"
	}
	var ips []string
	for _, n := range d.NetworkSettings.Networks {
		if n.IPAddress != "" {
			ips = append(ips, n.IPAddress)
		}
	}
	if len(ips) == 0 {
		return "?"
	}
	return slices.Min(ips)
}

// klogTime is a klog line's time to a tenth of a second ("I1204
// 12:34:56.789012 ..." → "12:34:56.7").
func klogTime(l string) string {
	f := strings.Fields(l)
	if len(f) < 2 {
		return "?"
	}
	return f[1][:min(10, len(f[1]))]
}

func lines(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Split(strings.TrimRight(ReadFile(path), "\n"), "\n")
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func earliest(times []string) string {
	if len(times) == 0 {
		return "?"
	}
	return slices.Min(times)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
