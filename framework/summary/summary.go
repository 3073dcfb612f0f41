// Package summary writes a short per-spec report: which phases a spec went
// through, when each started and how long it took, and, when the spec
// failed, which phase failed, the conditions of the Cluster and Machines at
// that moment and the state of their containers. It is the first file to
// read after a failed run, and the timing data that tells a slow step from a
// hung one.
//
// A Recorder is created at the start of a spec and written at its end,
// whatever happened in between:
//
//	r := summary.New("quick-start", dir)
//	DeferCleanup(r.Write) // registered first, so it runs last
//	done := r.Phase("create cluster")
//	err := createCluster()
//	done(err)
//
// A phase whose done function is never called (the spec panicked or timed
// out inside it) is reported as unfinished, and counts as failed.
//
// This package only records and renders what it is given: it must not talk
// to a Kubernetes API server or a container engine, so that it stays usable
// (and testable) without either. Conditions and the container table are
// passed in as plain data.
package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

const (
	// TextFile is the name of the human-readable summary Write creates.
	TextFile = "summary.txt"
	// JSONFile is the name of the machine-readable summary Write creates:
	// the Summary, as JSON.
	JSONFile = "summary.json"
)

// Result values of a Phase and of a Summary.
const (
	ResultPassed     = "passed"
	ResultFailed     = "failed"
	ResultUnfinished = "unfinished"
	// ResultWarning is a best-effort phase that ended with an error, e.g.
	// log collection from a machine that is gone: worth reading, but not a
	// failure of the spec.
	ResultWarning = "warning"
)

// Phase is one step of a spec.
type Phase struct {
	// Name says what the step does, e.g. "wait for control plane".
	Name string `json:"name"`
	// Start is when the step began.
	Start time.Time `json:"start"`
	// Duration is how long it took; for an unfinished phase, how long it had
	// been running when the summary was taken.
	Duration time.Duration `json:"duration"`
	// Result is ResultPassed, ResultFailed, ResultUnfinished or, for a
	// best-effort phase that ended with an error, ResultWarning.
	Result string `json:"result"`
	// BestEffort is set for phases whose failure does not fail the spec.
	BestEffort bool `json:"bestEffort,omitempty"`
	// Error is the error the step ended with, if any.
	Error string `json:"error,omitempty"`
}

// Condition is one status condition of an object, as Kubernetes reports it.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// Object is an object whose conditions are worth reporting, e.g. the
// Cluster or a Machine.
type Object struct {
	// Kind is the object's kind, e.g. "Machine".
	Kind string `json:"kind"`
	// Namespace and Name identify the object.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Conditions are the object's status conditions, in the order given.
	Conditions []Condition `json:"conditions,omitempty"`
}

// Snapshot points at a container snapshot saved next to the cluster's other
// artifacts, and carries its table so the summary is readable on its own.
type Snapshot struct {
	// Path is where the snapshot was saved, preferably relative to the
	// artifacts folder, e.g. "clusters/c1/containers.txt".
	Path string `json:"path,omitempty"`
	// Table is the snapshot's human-readable table (snapshot.WriteTable).
	Table string `json:"table,omitempty"`
	// Containers are the snapshot's containers, as much of each as a
	// failure report shows.
	Containers []Container `json:"containers,omitempty"`
}

// Container is one container of a snapshot.
type Container struct {
	Name string `json:"name"`
	// Role is kind's role label: control-plane, worker or
	// external-load-balancer.
	Role string `json:"role,omitempty"`
	// State is the engine's: created, running, paused, restarting,
	// removing, exited or dead.
	State     string `json:"state"`
	ExitCode  int    `json:"exitCode,omitempty"`
	OOMKilled bool   `json:"oomKilled,omitempty"`
	// Error is the engine's error for the container, e.g. why it did not
	// start.
	Error string `json:"error,omitempty"`
}

// Running reports whether the container's main process runs.
func (c Container) Running() bool { return c.State == "running" }

// Failure is why a spec failed.
type Failure struct {
	// Phase is the first phase that failed or never finished; empty if the
	// spec failed outside any phase.
	Phase string `json:"phase,omitempty"`
	// Message is the failure message, e.g. Ginkgo's.
	Message string `json:"message"`
	// Location is where the failure happened (file:line), if known.
	Location string `json:"location,omitempty"`
}

// Attribute is a named fact about the run, e.g. the cluster name.
type Attribute struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Summary is the content of a summary file.
type Summary struct {
	Spec       string        `json:"spec"`
	Result     string        `json:"result"`
	Start      time.Time     `json:"start"`
	Duration   time.Duration `json:"duration"`
	Attributes []Attribute   `json:"attributes,omitempty"`
	Phases     []Phase       `json:"phases"`
	// Failure is set when the spec failed: by Fail, or by a phase that
	// failed or never finished.
	Failure *Failure `json:"failure,omitempty"`
	// Objects and Snapshot are what the spec's cleanup found; the text
	// shows them only when the spec failed.
	Objects  []Object  `json:"objects,omitempty"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// Recorder collects a spec's phases and writes its summary. It is safe for
// concurrent use: a phase may end in another goroutine, even after Write
// (the file then does not show it, a later Write does).
type Recorder struct {
	spec string
	dir  string
	now  func() time.Time

	mu       sync.Mutex
	start    time.Time
	attrs    []Attribute
	phases   []*Phase
	failure  *Failure
	objects  []Object
	snapshot *Snapshot
}

// New starts a summary for spec, to be written into dir (created by Write
// if missing).
func New(spec, dir string) *Recorder {
	return newWithClock(spec, dir, time.Now)
}

func newWithClock(spec, dir string, now func() time.Time) *Recorder {
	return &Recorder{spec: spec, dir: dir, now: now, start: now()}
}

// Dir returns the folder the summary is written to.
func (r *Recorder) Dir() string { return r.dir }

// Set records an attribute of the run, e.g. Set("cluster", name). Setting a
// key again replaces its value; keys keep the order they were first set in.
func (r *Recorder) Set(key, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.attrs {
		if r.attrs[i].Key == key {
			r.attrs[i].Value = value
			return
		}
	}
	r.attrs = append(r.attrs, Attribute{Key: key, Value: value})
}

// Phase starts a phase and returns the function that ends it: call it with
// the error the phase ended with, or nil. Calls after the first are
// ignored.
func (r *Recorder) Phase(name string) (done func(error)) {
	return r.phase(name, false)
}

// BestEffortPhase is Phase for a step whose failure does not fail the spec,
// such as collecting artifacts: an error makes it a warning, and an
// unfinished best-effort phase is not taken for the failing phase.
func (r *Recorder) BestEffortPhase(name string) (done func(error)) {
	return r.phase(name, true)
}

func (r *Recorder) phase(name string, bestEffort bool) func(error) {
	r.mu.Lock()
	p := &Phase{Name: name, Start: r.now(), Result: ResultUnfinished, BestEffort: bestEffort}
	r.phases = append(r.phases, p)
	r.mu.Unlock()

	var once sync.Once
	return func(err error) {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			p.Duration = r.now().Sub(p.Start)
			p.Result = ResultPassed
			if err != nil {
				p.Result = ResultFailed
				if p.BestEffort {
					p.Result = ResultWarning
				}
				p.Error = err.Error()
			}
		})
	}
}

// Fail records that the spec failed, with the failure's message and
// location. The failing phase is worked out when the summary is taken.
// Only the first call counts.
func (r *Recorder) Fail(message, location string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure == nil {
		r.failure = &Failure{Message: message, Location: location}
	}
}

// SetObjects records the objects whose conditions the summary shows if the
// spec failed, replacing earlier ones.
func (r *Recorder) SetObjects(objs []Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.objects = append([]Object(nil), objs...)
}

// SetSnapshot records the container snapshot the summary points at, and
// copies, if the spec failed.
func (r *Recorder) SetSnapshot(s Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapshot = &s
}

// Summary returns what the recorder holds now. Unfinished phases get the
// time they have been running as their duration. The spec counts as failed
// if Fail was called or a phase failed or never finished.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	s := Summary{
		Spec:       r.spec,
		Start:      r.start,
		Duration:   now.Sub(r.start),
		Attributes: append([]Attribute(nil), r.attrs...),
		Phases:     make([]Phase, 0, len(r.phases)),
		Result:     ResultPassed,
	}
	failed := ""
	for _, p := range r.phases {
		c := *p
		if c.Result == ResultUnfinished {
			c.Duration = now.Sub(c.Start)
		}
		if (c.Result == ResultFailed || c.Result == ResultUnfinished) && !c.BestEffort && failed == "" {
			failed = c.Name
		}
		s.Phases = append(s.Phases, c)
	}
	switch {
	case r.failure != nil:
		f := *r.failure
		f.Phase = failed
		s.Failure = &f
	case failed != "":
		s.Failure = &Failure{Phase: failed, Message: phaseError(s.Phases, failed)}
	}
	if s.Failure != nil {
		s.Result = ResultFailed
	}
	s.Objects = append([]Object(nil), r.objects...)
	if r.snapshot != nil {
		snap := *r.snapshot
		snap.Containers = append([]Container(nil), snap.Containers...)
		s.Snapshot = &snap
	}
	return s
}

func phaseError(phases []Phase, name string) string {
	for _, p := range phases {
		if p.Name == name {
			if p.Error != "" {
				return p.Error
			}
			return "the phase never finished"
		}
	}
	return ""
}

// Write writes TextFile and JSONFile into the recorder's folder. It may be
// called more than once; each call rewrites both files with what the
// recorder holds then.
func (r *Recorder) Write() error {
	s := r.Summary()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("write summary of spec %q: %w", r.spec, err)
	}
	var text bytes.Buffer
	s.render(&text)
	j, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("write summary of spec %q: encode: %w", r.spec, err)
	}
	return errors.Join(
		writeFile(filepath.Join(r.dir, TextFile), text.Bytes()),
		writeFile(filepath.Join(r.dir, JSONFile), append(j, '\n')),
	)
}

func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write summary %q: %w", path, err)
	}
	return nil
}

// WriteText renders the summary for a person: a header, a table of phases
// (start relative to the spec's start, duration, result), and, for a failed
// spec, the failure, the objects' conditions and the container table.
func (s Summary) WriteText(w io.Writer) error {
	var b bytes.Buffer
	s.render(&b)
	_, err := w.Write(b.Bytes())
	return err
}

func (s Summary) render(b *bytes.Buffer) {
	fmt.Fprintf(b, "Spec:     %s\n", s.Spec)
	fmt.Fprintf(b, "Result:   %s\n", strings.ToUpper(s.Result))
	fmt.Fprintf(b, "Started:  %s\n", s.Start.UTC().Format(time.RFC3339))
	fmt.Fprintf(b, "Duration: %s\n", round(s.Duration))
	for _, a := range s.Attributes {
		fmt.Fprintf(b, "%s: %s\n", a.Key, a.Value)
	}

	b.WriteString("\nPhases:\n")
	tw := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  START\tDURATION\tRESULT\tPHASE")
	for _, p := range s.Phases {
		fmt.Fprintf(tw, "  +%s\t%s\t%s\t%s\n", round(p.Start.Sub(s.Start)), round(p.Duration), p.Result, p.Name)
	}
	_ = tw.Flush() // into a strings.Builder, which does not fail
	for _, p := range s.Phases {
		if p.Error != "" {
			fmt.Fprintf(b, "\n%s: %s\n", p.Name, indentRest(p.Error))
		}
	}

	if s.Failure == nil {
		return
	}
	b.WriteString("\nFailure:\n")
	if s.Failure.Phase != "" {
		fmt.Fprintf(b, "  phase:    %s\n", s.Failure.Phase)
	} else {
		b.WriteString("  phase:    (outside any phase)\n")
	}
	if s.Failure.Location != "" {
		fmt.Fprintf(b, "  location: %s\n", s.Failure.Location)
	}
	fmt.Fprintf(b, "  message:  %s\n", indentRest(s.Failure.Message))

	if len(s.Objects) > 0 {
		b.WriteString("\nConditions:\n")
		for _, o := range s.Objects {
			name := o.Name
			if o.Namespace != "" {
				name = o.Namespace + "/" + o.Name
			}
			fmt.Fprintf(b, "  %s %s\n", o.Kind, name)
			if len(o.Conditions) == 0 {
				b.WriteString("    (no conditions)\n")
				continue
			}
			tw := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
			for _, c := range o.Conditions {
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, dash(c.Reason), stamp(c.LastTransitionTime), oneLine(c.Message))
			}
			_ = tw.Flush() // into a strings.Builder, which does not fail
		}
	}

	if s.Snapshot != nil {
		b.WriteString("\nContainers")
		if s.Snapshot.Path != "" {
			fmt.Fprintf(b, " (%s)", s.Snapshot.Path)
		}
		b.WriteString(":\n")
		if s.Snapshot.Table != "" {
			for _, l := range strings.Split(strings.TrimRight(s.Snapshot.Table, "\n"), "\n") {
				b.WriteString("  " + l + "\n")
			}
		}
	}
}

// round keeps what a person needs: milliseconds under a second, tenths of
// a second under a minute, whole seconds beyond.
func round(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine folds a multi-line condition message so the table stays a table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// indentRest indents every line but the first, so a multi-line message
// lines up under its label.
func indentRest(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n            ")
}

// ReportEntry is the name of the Ginkgo report entry (ReportEntryVisibilityNever)
// whose value is the path of a summary's JSONFile, relative to the
// artifacts folder: framework/report finds a spec's summaries by it.
const ReportEntry = "capd-e2e/summary"
