package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// DefaultTimeout bounds each request when Options.Timeout is unset.
const DefaultTimeout = 30 * time.Second

// maxBody bounds how much of a checked URL's body is read.
const maxBody = 64 << 20

// parallel is how many requests run at once.
const parallel = 4

// Options tune Resolve. The zero value is ready to use.
type Options struct {
	// GOPROXY is the proxy list release markers are resolved through, in
	// the go command's syntax: entries separated by ',' (the next one is
	// tried on a 404 or 410 only) or '|' (on any error). "direct" and
	// "off" cannot list versions. If unset, the environment's GOPROXY,
	// else DefaultGOPROXY. GONOPROXY and GOPRIVATE are not honoured:
	// direct access cannot list versions either.
	GOPROXY string
	// HTTPClient makes every request. If unset, a client with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each request. If unset, DefaultTimeout.
	Timeout time.Duration
}

// Report is what Resolve did, for the log.
type Report struct {
	// Markers are the release markers resolved, in config order.
	Markers []Marker
	// URLs are the http(s) values that answered, in config order.
	URLs []URL
}

// Marker is a resolved release marker.
type Marker struct {
	// Field is the version's name field, e.g. "providers[0].versions[1].name".
	Field string
	// Marker is the marker as the config wrote it, Version what it
	// resolved to, Proxy the proxy that listed it.
	Marker, Version, Proxy string
}

// URL is an http(s) value that answered.
type URL struct {
	// Field is the version's value field, URL its value (resolved).
	Field, URL string
	// Took is how long the request took.
	Took time.Duration
}

// Lines returns the report one line per marker and URL.
func (r *Report) Lines() []string {
	var out []string
	for _, m := range r.Markers {
		out = append(out, fmt.Sprintf("%s: release marker %s is %s (listed by %s)", m.Field, m.Marker, m.Version, m.Proxy))
	}
	for _, u := range r.URLs {
		out = append(out, fmt.Sprintf("%s: %s answered in %s", u.Field, u.URL, u.Took.Round(time.Millisecond)))
	}
	return out
}

// version is one provider version that needs the network.
type version struct {
	v      *config.ProviderVersion
	field  string // "providers[i].versions[j]"
	marker *config.ReleaseMarker
	err    error // a marker that cannot be resolved
}

// Resolve resolves every release marker of cfg's providers in place,
// replacing it by the version it stands for in the version's name and
// value (as upstream's ResolveReleases), then checks that every http(s)
// value answers 200 OK to a GET (see CheckURL). It returns every problem,
// each naming its field, joined; and a report of what it resolved and
// checked, also on error. A config without markers or http(s) values
// makes no request. The requests are bounded by ctx and Options.Timeout
// each.
func Resolve(ctx context.Context, cfg *config.Config, opts Options) (*Report, error) {
	report := &Report{}
	var todo []*version
	for i := range cfg.Providers {
		for j := range cfg.Providers[i].Versions {
			pv := &cfg.Providers[i].Versions[j]
			v := &version{v: pv, field: fmt.Sprintf("providers[%d].versions[%d]", i, j)}
			if config.IsReleaseMarker(pv.Name) {
				m, err := config.ParseReleaseMarker(pv.Name)
				switch {
				case pv.Type != config.URLSource:
					v.err = fmt.Errorf("release marker %q needs type %s, not %q", pv.Name, config.URLSource, pv.Type)
				case err != nil:
					v.err = err
				default:
					v.marker = &m
				}
			}
			if v.marker != nil || v.err != nil || config.IsNetworkSource(pv.Value) {
				todo = append(todo, v)
			}
		}
	}
	if len(todo) == 0 {
		return report, nil
	}
	opts = opts.withDefaults()
	markerErrs := resolveMarkers(ctx, todo, opts, report)
	urlErrs := checkValues(ctx, todo, opts, report)
	var errs []error
	for i := range todo {
		errs = append(errs, markerErrs[i], urlErrs[i])
	}
	return report, errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.GOPROXY == "" {
		o.GOPROXY = os.Getenv("GOPROXY")
	}
	if o.GOPROXY == "" {
		o.GOPROXY = DefaultGOPROXY
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.Timeout}
	}
	return o
}

// resolveMarkers resolves the markers of todo, listing each module path
// once; the errors are todo's, by index.
func resolveMarkers(ctx context.Context, todo []*version, opts Options, report *Report) []error {
	errs := make([]error, len(todo))
	var paths []string
	listings := map[string]listing{}
	for i, v := range todo {
		if v.err != nil {
			errs[i] = fmt.Errorf("%s.name: %w", v.field, v.err)
		}
		if v.marker == nil {
			continue
		}
		for _, p := range listPaths(*v.marker) {
			if _, ok := listings[p]; !ok {
				listings[p] = listing{}
				paths = append(paths, p)
			}
		}
	}
	if len(paths) == 0 {
		return errs
	}
	results := make([]listing, len(paths))
	if proxies, err := parseGOPROXY(opts.GOPROXY); err != nil {
		for i := range results {
			results[i].err = err // each marker's error names its field
		}
	} else {
		l := &lister{client: opts.HTTPClient, timeout: opts.Timeout, goproxy: opts.GOPROXY, proxies: proxies}
		forEach(len(paths), func(i int) { results[i] = l.list(ctx, paths[i]) })
	}
	for i, p := range paths {
		listings[p] = results[i]
	}
	for i, v := range todo {
		if v.marker == nil {
			continue
		}
		var ls []listing
		for _, p := range listPaths(*v.marker) {
			ls = append(ls, listings[p])
		}
		resolved, from, err := pick(*v.marker, ls)
		if err != nil {
			errs[i] = fmt.Errorf("%s.name: release marker %q: %w", v.field, v.v.Name, err)
			continue
		}
		report.Markers = append(report.Markers, Marker{Field: v.field + ".name", Marker: v.v.Name, Version: resolved, Proxy: from})
		v.v.Value = strings.ReplaceAll(v.v.Value, v.v.Name, resolved)
		v.v.Name = resolved
	}
	return errs
}

// checkValues checks the http(s) values of todo, each URL once; the
// errors are todo's, by index. A value still holding a marker (one that
// failed) is not checked.
func checkValues(ctx context.Context, todo []*version, opts Options, report *Report) []error {
	var urls []string
	index := map[string]int{}
	for _, v := range todo {
		if u := v.v.Value; config.IsNetworkSource(u) && !strings.Contains(u, "{go://") {
			if _, ok := index[u]; !ok {
				index[u] = len(urls)
				urls = append(urls, u)
			}
		}
	}
	results := make([]error, len(urls))
	took := make([]time.Duration, len(urls))
	forEach(len(urls), func(i int) {
		reqCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		t0 := time.Now()
		results[i] = withTimeout(ctx, get(reqCtx, opts.HTTPClient, urls[i]), opts.Timeout)
		took[i] = time.Since(t0)
	})
	errs := make([]error, len(todo))
	for i, v := range todo {
		k, ok := index[v.v.Value]
		switch {
		case !ok:
		case results[k] != nil:
			errs[i] = fmt.Errorf("%s.value: %q: %w", v.field, v.v.Value, results[k])
		default:
			report.URLs = append(report.URLs, URL{Field: v.field + ".value", URL: v.v.Value, Took: took[k]})
		}
	}
	return errs
}

// forEach runs f for 0..n-1, parallel at a time, and waits for all.
func forEach(n int, f func(int)) {
	var g errgroup.Group
	g.SetLimit(parallel)
	for i := range n {
		g.Go(func() error {
			f(i)
			return nil
		})
	}
	_ = g.Wait() // f reports through its results
}

// CheckURL checks that rawURL answers 200 OK to a GET, reading (and
// discarding) up to 64 MiB of its body; the error names field (e.g.
// `providers[1].versions[0].value: "https://...": 404 Not Found`), or is
// just the URL's when field is "". ctx bounds it; a nil client is one
// with DefaultTimeout.
func CheckURL(ctx context.Context, client *http.Client, field, rawURL string) error {
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	err := get(ctx, client, rawURL)
	switch {
	case err == nil:
		return nil
	case field == "":
		return fmt.Errorf("%q: %w", rawURL, err)
	default:
		return fmt.Errorf("%s: %q: %w", field, rawURL, err)
	}
}

func get(ctx context.Context, client *http.Client, rawURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &statusError{code: resp.StatusCode, status: resp.Status, body: body}
	}
	if _, err := io.CopyN(io.Discard, resp.Body, maxBody); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s, then reading the body: %w", resp.Status, err)
	}
	return nil
}

// statusError is an answer other than 200 OK: its status, and the first
// line of its body when it has one (a module proxy says why there).
type statusError struct {
	code   int
	status string
	body   []byte
}

func (e *statusError) Error() string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(e.body)), "\n")
	if line = strings.TrimSpace(line); line == "" || len(line) > 200 || strings.HasPrefix(line, "<") {
		return e.status // an HTML page says nothing a status does not
	}
	return e.status + ": " + line
}

func (e *statusError) notFound() bool {
	return e.code == http.StatusNotFound || e.code == http.StatusGone
}

// withTimeout says so when err is the per-request timeout, not parent's
// end.
func withTimeout(parent context.Context, err error, timeout time.Duration) error {
	var ne net.Error
	if err != nil && parent.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w (no answer within the per-request timeout %s)", err, timeout)
	}
	return err
}
