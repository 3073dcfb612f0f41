package logs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// A running machine is collected with one exec of a POSIX shell script
// (bundleScript, one capd_run, capd_go or capd_copy line per step,
// bundleTail)
// instead of one exec per command and one engine copy per path: each exec
// costs the engine a runc process or two, and upstream's seven per machine
// cost about as much CPU as the commands they run (BenchmarkCollectNode).
//
// The script stages every command's standard output, standard error and
// exit status in a folder under $TMPDIR (default /tmp), runs the commands
// in commandLanes lanes in the background, one after the other in each,
// each under coreutils' timeout when the machine has it (a Go program with
// goEnv exported in its own subshell, capd_go), and meanwhile writes the
// copies to its standard output as tar archives. It then waits for the
// commands and writes a last archive of the staged files. Its standard
// output is thus tar archives one after the other, read by eachEntry:
//
//	<b>/mark/<i>   empty; what follows, up to the next entry under <b>/,
//	               is the archive of copy step i (tar -C <parent> <base>)
//	<b>/ctl/<i>.rc "<exit code> <start> <end>" (uptime seconds) of step i
//	               (the command, or the copy's tar), or "missing" for a
//	               copy whose path does not exist
//	<b>/ctl/<i>.err its standard error
//	<b>/out/<i>    command step i's standard output
//
// where <b> is "capd-e2e-logs.<token>", the token being random per run so
// that no copied tree can pass for a control entry. Copies follow symbolic
// links (tar -h, as upstream's --dereference); a file met twice comes as a
// hard link, which the unpacker turns back into a copy. The script needs
// sh, tar (GNU or busybox), mkdir, rm and /proc/uptime; timeout is
// optional: without it a command is bounded only by the whole exec's
// deadline.
const bundleScript = `b=capd-e2e-logs.%s
r=${TMPDIR:-/tmp}
d=$r/$b
mkdir -m 700 "$d" "$d/out" "$d/ctl" "$d/mark" || exit 125
trap 'rm -rf "$d"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
if command -v timeout >/dev/null 2>&1; then
	capd_to() { timeout -k 5 "$@"; }
else
	capd_to() { shift; "$@"; }
fi
capd_run() {
	i=$1; shift
	read -r s _ </proc/uptime
	capd_to "$@" >"$d/out/$i" 2>"$d/ctl/$i.err" </dev/null
	c=$?
	read -r e _ </proc/uptime
	echo "$c $s $e" >"$d/ctl/$i.rc"
}
capd_go() ( export %s; capd_run "$@" )
capd_copy() {
	if [ ! -e "$3/$4" ]; then echo missing >"$d/ctl/$1.rc"; return; fi
	: >"$d/mark/$1" && tar -cf - -C "$r" "$b/mark/$1" || return
	read -r s _ </proc/uptime
	capd_to "$2" tar -chf - -C "$3" "$4" 2>"$d/ctl/$1.err" </dev/null
	c=$?
	read -r e _ </proc/uptime
	echo "$c $s $e" >"$d/ctl/$1.rc"
}
`

// commandLanes is how many commands of a machine run at once. All at once,
// they cost more CPU than one after the other (their Go runtimes and
// journalctl contend for the same cores), and the collector usually
// collects several machines at once anyway; one after the other, a machine
// alone takes the sum of its commands. Measured on 2 cores: the seven
// default commands in one kind node cost 566 ms of CPU all at once, 498 ms
// in two lanes, 471 ms one after the other (10 runs each); collecting 3
// kind nodes (BenchmarkCollectNode, 10 rounds) took a median 2.36 s of CPU
// in the nodes and 1.73 s of wall time all at once, 2.09 s and 1.55 s in
// two lanes.
const commandLanes = 2

// bundleTail waits for the commands and sends what they left.
const bundleTail = `wait
tar -cf - -C "$r" "$b/ctl" "$b/out"
`

// bundle is one machine's collection by a single exec.
type bundle struct {
	c     *Collector
	dir   string
	steps []step // stepExec and stepCopy only
	// root is the first name component of control entries.
	root   string
	script string
	// timeout bounds the exec: the slowest command or all copies in a row,
	// whichever is longer, plus one command timeout for the last archive.
	timeout time.Duration

	// Filled while the stream is read (by one goroutine), read after.
	entries int
	status  []string      // raw .rc content; "" if not received
	stderr  []*tailBuffer // .err content
	out     []*lazyFile   // command steps' output files
	unpack  []*unpacker   // copy steps' writers, made at their mark
	errs    [][]error     // write errors, per step
	marked  []bool
	current int // copy step whose archive is being read; -1 if none
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// splitPath returns what the script passes to tar -C <parent> <base> to
// copy p.
func splitPath(p string) (parent, base string) {
	p = path.Clean("/" + p)
	if p == "/" {
		return "/", "."
	}
	return path.Dir(p), path.Base(p)
}

func (c *Collector) newBundle(dir string, steps []step) *bundle {
	b := &bundle{
		c: c, dir: dir, steps: steps,
		root:    "capd-e2e-logs." + runtime.NewRunID(),
		status:  make([]string, len(steps)),
		stderr:  make([]*tailBuffer, len(steps)),
		out:     make([]*lazyFile, len(steps)),
		unpack:  make([]*unpacker, len(steps)),
		errs:    make([][]error, len(steps)),
		marked:  make([]bool, len(steps)),
		current: -1,
	}
	var script strings.Builder
	fmt.Fprintf(&script, bundleScript, strings.TrimPrefix(b.root, "capd-e2e-logs."), strings.Join(goEnv, " "))
	// Commands go round robin into commandLanes lanes, each run in the
	// background, one command after the other.
	lanes := make([]strings.Builder, commandLanes)
	laneTime := make([]time.Duration, commandLanes)
	var copies time.Duration
	n := 0
	for i, s := range steps {
		b.stderr[i] = &tailBuffer{max: 64 << 10}
		if s.kind != stepExec {
			continue
		}
		t := c.stepTimeout(s)
		l := n % commandLanes
		n++
		laneTime[l] += t
		b.out[i] = &lazyFile{path: filepath.Join(dir, s.output)}
		fn := "capd_run"
		if s.goProgram {
			fn = "capd_go"
		}
		fmt.Fprintf(&lanes[l], "%s %d %s", fn, i, seconds(t))
		for _, a := range s.cmd {
			lanes[l].WriteString(" " + shellQuote(a))
		}
		lanes[l].WriteString("\n")
	}
	for _, l := range lanes {
		if l.Len() > 0 {
			script.WriteString("{\n" + l.String() + "} &\n")
		}
	}
	// Copies after the commands are started, so that they overlap.
	for i, s := range steps {
		if s.kind == stepCopy {
			t := c.stepTimeout(s)
			copies += t
			parent, base := splitPath(s.path)
			fmt.Fprintf(&script, "capd_copy %d %s %s %s\n", i, seconds(t), shellQuote(parent), shellQuote(base))
		}
	}
	script.WriteString(bundleTail)
	b.script = script.String()
	b.timeout = max(slices.Max(laneTime), copies) + c.commandTimeout()
	return b
}

// run execs the script in container and turns what came back into one
// outcome per step. ok is false when nothing at all came back and the
// command did not end for lack of time (typically: the machine has no sh):
// the caller should then collect step by step; note says why.
func (b *bundle) run(ctx context.Context, container string) (outcomes []outcome, scriptFailure *Failure, note string, ok bool) {
	start := time.Now()
	pr, pw := io.Pipe()
	head := &headBuffer{max: 4 << 10}
	received := make(chan error, 1)
	go func() {
		err := eachEntry(io.TeeReader(pr, head), b.entry)
		if err != nil {
			// Keep reading so that the exec is not blocked on us.
			_, _ = io.Copy(io.Discard, pr) // draining only; err above is the one reported
		}
		received <- err
	}()
	scriptStderr := &tailBuffer{max: 64 << 10}
	res, execErr := bounded(ctx, b.timeout, func(ctx context.Context) (runtime.ExecResult, error) {
		// Privileged like upstream's collector, so that extra commands
		// such as dmesg or iptables-save work in an unprivileged container.
		return b.c.Runtime.Exec(ctx, container, runtime.ExecOptions{
			Cmd: []string{"sh", "-c", b.script}, Stdout: pw, Stderr: scriptStderr, Privileged: true,
		})
	})
	_ = pw.CloseWithError(execErr) // nil: io.EOF for the reader
	recvErr := <-received
	for _, u := range b.unpack {
		if u != nil {
			u.close()
		}
	}

	if b.entries == 0 && (execErr != nil || res.ExitCode != 0) && ctx.Err() == nil && !errors.Is(execErr, context.DeadlineExceeded) {
		for _, o := range b.out {
			if o != nil {
				_ = o.close(false) // discarding a partial file; the exec's error below is reported
			}
		}
		why := execErr
		if why == nil {
			why = fmt.Errorf("exited with code %d", res.ExitCode)
		}
		note = fmt.Sprintf("the collection script could not run (%v); collected step by step instead\n%s%s", why, head.String(), scriptStderr.String())
		return nil, nil, note, false
	}

	// Why an item that never arrived did not.
	var lost string
	switch {
	case execErr != nil:
		lost = "not received: " + describe(ctx, execErr, b.timeout)
	case recvErr != nil:
		lost = "not received: " + recvErr.Error()
	case res.ExitCode != 0:
		lost = fmt.Sprintf("not received: the collection script exited with code %d", res.ExitCode)
	default:
		lost = "not received"
	}
	outcomes = make([]outcome, len(b.steps))
	for i, s := range b.steps {
		if s.kind == stepExec {
			outcomes[i] = b.commandOutcome(i, s, lost)
		} else {
			outcomes[i] = b.copyOutcome(i, s, lost)
		}
	}
	if execErr != nil || recvErr != nil || res.ExitCode != 0 {
		f := &Failure{Output: ".", Command: []string{"sh", "-c", b.script}, Stderr: scriptStderr.String(), Duration: since(start)}
		switch {
		case execErr != nil:
			f.Error = "collection script: " + describe(ctx, execErr, b.timeout)
		case recvErr != nil:
			f.Error = "collection script: " + recvErr.Error()
			if h := head.String(); b.entries == 0 && h != "" {
				f.Stdout = h
			}
		default:
			code := res.ExitCode
			f.ExitCode = &code
			f.Error = fmt.Sprintf("collection script exited with code %d", code)
		}
		scriptFailure = f
	} else if s := scriptStderr.String(); s != "" {
		note = "the collection script wrote on standard error:\n" + s
	}
	return outcomes, scriptFailure, note, true
}

// entry handles one entry of the stream.
func (b *bundle) entry(h *tar.Header, r io.Reader) error {
	b.entries++
	name := path.Clean(strings.TrimPrefix(h.Name, "./"))
	if first, rest, _ := strings.Cut(name, "/"); first == b.root {
		b.control(rest, h, r)
		return nil
	}
	if b.current < 0 {
		return nil // nothing announced it: not ours to write
	}
	i := b.current
	if b.unpack[i] == nil {
		return nil
	}
	if err := b.unpack[i].entry(h, r); err != nil {
		b.errs[i] = append(b.errs[i], err)
	}
	return nil
}

func (b *bundle) control(name string, h *tar.Header, r io.Reader) {
	dir, file, _ := strings.Cut(name, "/")
	if h.Typeflag != tar.TypeReg || file == "" {
		return
	}
	b.current = -1
	base, ext, _ := strings.Cut(file, ".")
	i, err := strconv.Atoi(base)
	if err != nil || i < 0 || i >= len(b.steps) {
		return
	}
	switch {
	case dir == "mark" && ext == "" && b.steps[i].kind == stepCopy:
		b.current, b.marked[i] = i, true
		u, err := newUnpacker(b.dir, b.steps[i].output)
		if err != nil {
			b.errs[i] = append(b.errs[i], err)
			return
		}
		b.unpack[i] = u
	case dir == "ctl" && ext == "rc":
		s, _ := io.ReadAll(io.LimitReader(r, 256))
		b.status[i] = strings.TrimSpace(string(s))
	case dir == "ctl" && ext == "err":
		_, _ = io.Copy(b.stderr[i], r) // into a bounded buffer, which does not fail
	case dir == "out" && ext == "" && b.out[i] != nil:
		if _, err := io.Copy(b.out[i], r); err != nil {
			b.errs[i] = append(b.errs[i], err)
		}
	}
}

// parseStatus reads "<exit code> <start> <end>".
func parseStatus(s string) (code int, took time.Duration, ok bool) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, 0, false
	}
	code, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0, false
	}
	if len(f) == 3 {
		start, err1 := strconv.ParseFloat(f[1], 64)
		end, err2 := strconv.ParseFloat(f[2], 64)
		if err1 == nil && err2 == nil && end >= start {
			took = time.Duration((end - start) * float64(time.Second)).Round(10 * time.Millisecond)
		}
	}
	return code, took, true
}

// timedOut tells whether code is how timeout(1) reports that it stopped the
// command: 124, or the command killed by TERM or KILL once its time was up.
func timedOut(code int, took, limit time.Duration) bool {
	return code == 124 || ((code == 143 || code == 137) && took >= limit-time.Second)
}

func (b *bundle) commandOutcome(i int, s step, lost string) outcome {
	out := b.out[i]
	code, took, ok := parseStatus(b.status[i])
	f := Failure{Output: s.output, Command: s.cmd, Stderr: b.stderr[i].String()}
	if took > 0 {
		f.Duration = took.String()
	}
	success := ok && code == 0 && len(b.errs[i]) == 0
	closeErr := out.close(success)
	limit := b.c.stepTimeout(s)
	switch {
	case !ok:
		f.Error = lost
	case len(b.errs[i]) > 0:
		f.Error = errors.Join(b.errs[i]...).Error()
	case timedOut(code, took, limit):
		f.Error = fmt.Sprintf("timed out after %s", limit)
	case code != 0:
		f.exited(code, out)
	case closeErr != nil:
		f.Error = closeErr.Error()
	default:
		return outcome{stderr: f.Stderr}
	}
	return outcome{failures: []Failure{f}}
}

func (b *bundle) copyOutcome(i int, s step, lost string) outcome {
	f := Failure{Output: s.output, Path: s.path, Stderr: b.stderr[i].String()}
	if b.status[i] == "missing" {
		if s.optional {
			return outcome{}
		}
		f.Error = fmt.Sprintf("%s does not exist in the container", s.path)
		return outcome{failures: []Failure{f}}
	}
	code, took, ok := parseStatus(b.status[i])
	if took > 0 {
		f.Duration = took.String()
	}
	var fs []Failure
	var warning string
	switch {
	case !ok && b.marked[i]:
		f.Error = "the end of the copy was not received (what arrived is kept): " + strings.TrimPrefix(lost, "not received: ")
		fs = append(fs, f)
	case !ok:
		f.Error = lost
		fs = append(fs, f)
	case len(b.errs[i]) > 0:
		f.Error = errors.Join(b.errs[i]...).Error()
		fs = append(fs, f)
	case timedOut(code, took, b.c.stepTimeout(s)):
		f.Error = fmt.Sprintf("timed out after %s", b.c.stepTimeout(s))
		fs = append(fs, f)
	case code == 1 && onlyChangedWhileRead(f.Stderr):
		// GNU tar's warning for a log being appended to as it is read:
		// the file is in the archive, as of that moment.
		warning = f.Stderr
	case code != 0:
		f.ExitCode = &code
		f.Error = fmt.Sprintf("tar exited with code %d", code)
		fs = append(fs, f)
	default:
		warning = f.Stderr
	}
	if u := b.unpack[i]; u != nil && len(u.skipped) > 0 {
		fs = append(fs, Failure{Output: s.output, Path: s.path,
			Error: fmt.Sprintf("skipped %d tar entries with unsafe names: %s", len(u.skipped), strings.Join(u.skipped, ", "))})
	}
	return outcome{failures: fs, stderr: warning}
}

func onlyChangedWhileRead(stderr string) bool {
	seen := false
	for line := range strings.Lines(stderr) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.Contains(line, "file changed as we read it") {
			return false
		}
		seen = true
	}
	return seen
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}
