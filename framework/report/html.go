package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/summary"
)

//go:embed report.html.tmpl
var htmlTemplate string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"href":     href,
	"duration": roundDuration,
	"stamp":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"bars":     bars,
	"objects":  objects,
	"lower":    strings.ToLower,
	"join":     strings.Join,
	"plural": func(n int, word string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s", word)
		}
		return fmt.Sprintf("%d %ss", n, word)
	},
}).Parse(htmlTemplate))

// HTML renders the run as one self-contained page: inline CSS, no script,
// no reference outside the artifacts folder. It follows the conventions
// of Prow's html lens: the <title> is the lens's title, the <meta
// name="description"> its tooltip.
func HTML(run Run) ([]byte, error) {
	var b bytes.Buffer
	if err := page.Execute(&b, run); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Title is the page's title.
func (r Run) Title() string {
	return fmt.Sprintf("capd-e2e %s: %s (run %s)", r.Result, r.Description, r.ID)
}

// Summary is the page's description: the failing phase, or that all
// passed.
func (r Run) Summary() string {
	failed, total := 0, 0
	for _, s := range r.Specs {
		if s.SuiteNode {
			continue
		}
		total++
		if s.Failed {
			failed++
		}
	}
	if r.Failing != "" {
		return fmt.Sprintf("%d of %d specs failed; first: %s", failed, total, r.Failing)
	}
	return fmt.Sprintf("all %d specs passed in %s", total, roundDuration(r.Duration))
}

// href is a link to an artifact, relative to the report, each segment
// escaped.
func href(rel string) template.URL {
	dir := strings.HasSuffix(rel, "/")
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u := strings.Join(segs, "/")
	if dir {
		u += "/"
	}
	return template.URL(u)
}

func roundDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Bar is one phase of a timeline, placed in percent of the summary's
// duration.
type Bar struct {
	Name     string
	Result   string
	Offset   string // "+1m2s"
	Duration string
	Error    string
	// Style places the bar: left and width in percent.
	Style template.CSS
	// Left and Width are the same numbers, for tests.
	Left, Width float64
}

// minWidth keeps a phase of a few milliseconds visible.
const minWidth = 0.3

func bars(s summary.Summary) []Bar {
	total := s.Duration
	for _, p := range s.Phases {
		if end := p.Start.Sub(s.Start) + p.Duration; end > total {
			total = end
		}
	}
	out := make([]Bar, 0, len(s.Phases))
	for _, p := range s.Phases {
		left, width := 0.0, 100.0
		if total > 0 {
			left = 100 * float64(p.Start.Sub(s.Start)) / float64(total)
			width = 100 * float64(p.Duration) / float64(total)
		}
		left = max(0, min(left, 100-minWidth))
		width = max(minWidth, min(width, 100-left))
		out = append(out, Bar{
			Name: p.Name, Result: p.Result, Error: p.Error,
			Offset:   "+" + roundDuration(p.Start.Sub(s.Start)),
			Duration: roundDuration(p.Duration),
			Style:    template.CSS(fmt.Sprintf("left:%.3f%%;width:%.3f%%", left, width)),
			Left:     left, Width: width,
		})
	}
	return out
}

// ObjectRow is one object of a summary as the report's table shows it.
type ObjectRow struct {
	Kind, Name string
	Healthy    bool
	// State is the Ready or Available condition, "Ready=True".
	State     string
	Unhealthy []summary.UnhealthyCondition
}

func objects(s summary.Summary) []ObjectRow {
	var out []ObjectRow
	unhealthy := s.UnhealthyConditions()
	for _, o := range s.Objects {
		row := ObjectRow{Kind: o.Kind, Name: o.Name, Healthy: true, State: "no conditions"}
		for _, c := range o.Conditions {
			if c.Type == "Available" || (c.Type == "Ready" && !strings.HasPrefix(row.State, "Available")) {
				row.State = c.Type + "=" + c.Status
			}
		}
		for _, u := range unhealthy {
			if u.Kind == o.Kind && u.Name == o.Name && u.Namespace == o.Namespace {
				row.Unhealthy = append(row.Unhealthy, u)
				row.Healthy = false
			}
		}
		out = append(out, row)
	}
	return out
}
