// Package logs copies the logs of CAPD machine and load-balancer containers
// into an artifacts folder, so that a failed run can be diagnosed after its
// containers are gone.
//
// Collector implements upstream's framework.ClusterLogCollector (so it plugs
// into framework.WithMachineLogCollector) and adds CollectCluster and
// CollectMachines, which collect many containers at once. It fixes the gaps
// of upstream's DockerLogCollector: output files hold the command's standard
// output only (no stream framing, no standard error mixed in), every
// command, copy and engine call has its own deadline, a whole collection has
// one too, machines are collected concurrently, tar streams are unpacked in
// Go without letting an entry escape the target folder, and whatever failed
// is written down next to the logs.
//
// # One exec per machine
//
// Each exec costs the engine a runc process or two, which on a small CI
// machine is most of a collection's time; upstream makes seven per machine.
// In a running machine the Collector makes one: a POSIX sh script (see
// bundleScript) that runs the commands in two lanes in the background (one
// command after the other in each; commandLanes says why), each under
// timeout(1) when the machine has it, stages their output, standard
// error and exit status under $TMPDIR (default /tmp, a tmpfs in kind and
// CAPD nodes) and meanwhile streams the copies; then it sends what the
// commands left, and removes its folder. Its standard output is tar archives
// one after the other, unpacked on the host as they arrive. The inspect
// document and the container's own output come from the engine API at the
// same time, without an exec. The machine needs sh, tar, mkdir and rm, as
// any kind node image has; if the script cannot be run at all, the
// Collector falls back to one exec per command and an engine copy per path,
// and says so in stderr.log.
//
// What is left is mostly the commands' own CPU, and two thirds of that is
// the start-up of three Go programs. On one kind node (v1.36.3, 2 cores),
// BenchmarkCollectNode (10 rounds) put a collection at 624 ms of CPU: 550
// ms in runc and the node's processes, 52 ms in the engine's daemons, 22 ms
// in the collector; upstream's took 1148 ms. Timed one by one in the same
// node (median of 3): kubelet --version 118 ms (as much from a copy on
// ext4: its package initialisers, not the overlay filesystem), crictl info
// 68 ms, crictl ps -a 64 ms, each journalctl 25-34 ms (25 ms for -k, which
// printed nothing: mostly opening the journal), the tar of /var/log/pods
// 11 ms; 372 ms in all. So even an exec that cost nothing would leave
// upstream at about 2.6 times our CPU (3.0 without crictl ps, which
// upstream does not run); one journalctl pass split on the host would save
// at most the three openings, about 80 ms.
//
// What a command printed lives in the machine until the command ends: if
// the machine dies while a command runs, that output is lost and the
// command is listed in errors.json as not received, while the copies, sent
// first, are kept.
//
// # What a machine's folder holds
//
//	journal.log            journalctl --no-pager --output=short-precise
//	kern.log               the same, -k
//	kubelet.log            the same, -u kubelet.service
//	containerd.log         the same, -u containerd.service
//	kubelet-version.txt    kubelet --version
//	containerd-info.txt    crictl info
//	crictl-ps.txt          crictl ps -a
//	pods/                  /var/log/pods, copied as one tar stream
//	bootstrap/             /run/cluster-api, if present: CAPD's
//	                       capd.bootstrap.started and kubeadm's
//	                       bootstrap-success.complete sentinels
//	cloud-init-output.log  /var/log/cloud-init-output.log, if present
//	inspect.json           the engine's inspect document
//	container-stdout.log   the container's own output (its init), stdout
//	container-stderr.log   the same, stderr
//	errors.json            what failed (see Failure); absent if nothing did
//	stderr.log             standard error of commands that succeeded
//	                       anyway; absent if there was none
//
// plus one file per Collector.AdditionalLogs entry and one file or folder per
// Collector.AdditionalCopies entry.
//
// CAPD runs no cloud-init: it turns the bootstrap data into commands that it
// execs one by one and keeps their output in its own controller log and in
// the DockerMachine's BootstrapSucceeded condition, not in the container. What
// it leaves inside the machine are the sentinel files under /run/cluster-api,
// hence bootstrap/. /run/kubeadm (the kubeadm configuration CAPD writes) is
// not copied by default because it holds bootstrap tokens and the
// certificate key; add it to AdditionalCopies for a private run.
//
// A load balancer's folder holds inspect.json, container-stdout.log,
// container-stderr.log, haproxy.cfg and, as above, errors.json.
//
// Each entry of errors.json names the output, the command (or the path
// copied), the exit code when the command ran to its end, the tail of its
// standard error, how long it ran and what went wrong; an entry for "."
// with the script as its command says the collection script itself failed.
// A command that cannot be started (exit code 126 or 127, e.g. kubelet
// missing) is reported by the shell on its standard error; when the engine
// reports it instead (the step-by-step fallback), on the command's standard
// output, that text goes into the entry's "stdout" instead of a log file. A
// copied log that grew while tar read it is not a failure: tar's warning
// goes to stderr.log.
//
// Files from a command that failed are kept with whatever it wrote before it
// failed. Commands are not run in a container that is not running (each is
// listed in errors.json as skipped), but copies and the container's own log
// are still taken through the engine API, since it serves them from a
// stopped container too.
//
// This package must not talk to an engine except through its Engine (a part of runtime.Containers),
// must not run the docker CLI or a host tar, must not stop at the first
// failure, and must never block past its deadlines. What it runs inside a
// machine must only read, apart from its own staging folder.
package logs
