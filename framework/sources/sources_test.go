package sources

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/config"
)

// server is an httptest server that answers path -> body (200), status
// codes for paths in codes, 404 otherwise, and counts the requests per
// path.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int
}

func newServer(t *testing.T, bodies map[string]string, codes map[string]int) *server {
	t.Helper()
	s := &server{requests: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.Path]++
		s.mu.Unlock()
		if code, ok := codes[r.URL.Path]; ok {
			http.Error(w, fmt.Sprintf("status %d for %s", code, r.URL.Path), code)
			return
		}
		body, ok := bodies[r.URL.Path]
		if !ok {
			http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if path == "" {
		n := 0
		for _, c := range s.requests {
			n += c
		}
		return n
	}
	return s.requests[path]
}

// closedURL is the URL of a server that no longer listens.
func closedURL(t *testing.T) string {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u
}

// modPath is an upper-case module path, to prove escaping: the proxy
// serves it as example.com/!org/provider.
const (
	modPath = "example.com/Org/provider"
	escaped = "/example.com/!org/provider/@v/list"
	// list holds other minors, pre-releases, a tag that is no version
	// and a patch whose string sorts below its predecessor's (v1.13.10).
	list = "v1.12.9\nv1.13.0\nv1.13.4\nv1.13.10\nv1.13.11-rc.0\nv1.14.0\nv1.14.1 2026-01-02T00:00:00Z\nv1.14.2-rc.1\nnot-a-version\n"
)

func marker(series string) string { return "{go://" + modPath + "@" + series + "}" }

func urlVersion(name, value string) config.Provider {
	return config.Provider{Name: "p", Type: config.InfrastructureProvider,
		Versions: []config.ProviderVersion{{Name: name, Value: value, Type: config.URLSource}}}
}

func TestResolveRewritesMarkersAndChecksURLs(t *testing.T) {
	proxy := newServer(t, map[string]string{escaped: list}, nil)
	files := newServer(t, map[string]string{
		"/v1.13.10/components.yaml":     "kind: List\n",
		"/v1.14.2-rc.1/components.yaml": "kind: List\n",
	}, nil)
	cfg := &config.Config{Providers: []config.Provider{
		urlVersion(marker("v1.13"), files.URL+"/"+marker("v1.13")+"/components.yaml"),
		urlVersion(marker("latest-v1.14"), files.URL+"/"+marker("latest-v1.14")+"/components.yaml"),
		urlVersion(marker("v1.14"), "/local/components.yaml"),
	}}
	report, err := Resolve(context.Background(), cfg, Options{GOPROXY: proxy.URL})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	want := []config.ProviderVersion{
		{Name: "v1.13.10", Value: files.URL + "/v1.13.10/components.yaml"},
		{Name: "v1.14.2-rc.1", Value: files.URL + "/v1.14.2-rc.1/components.yaml"},
		{Name: "v1.14.1", Value: "/local/components.yaml"},
	}
	for i, w := range want {
		if got := cfg.Providers[i].Versions[0]; got.Name != w.Name || got.Value != w.Value {
			t.Errorf("providers[%d].versions[0] = %s %s, want %s %s", i, got.Name, got.Value, w.Name, w.Value)
		}
	}
	if n := proxy.count(escaped); n != 1 {
		t.Errorf("the module's list was fetched %d times, want once for its three markers", n)
	}
	for _, p := range []string{"/v1.13.10/components.yaml", "/v1.14.2-rc.1/components.yaml"} {
		if n := files.count(p); n != 1 {
			t.Errorf("%s fetched %d times, want 1", p, n)
		}
	}
	lines := strings.Join(report.Lines(), "\n")
	for _, w := range []string{
		"providers[0].versions[0].name: release marker {go://example.com/Org/provider@v1.13} is v1.13.10 (listed by " + proxy.URL + ")",
		"providers[1].versions[0].name: release marker {go://example.com/Org/provider@latest-v1.14} is v1.14.2-rc.1",
		"providers[2].versions[0].name: release marker {go://example.com/Org/provider@v1.14} is v1.14.1",
		"providers[0].versions[0].value: " + files.URL + "/v1.13.10/components.yaml answered in ",
	} {
		if !strings.Contains(lines, w) {
			t.Errorf("report lacks %q:\n%s", w, lines)
		}
	}
	if len(report.URLs) != 2 {
		t.Errorf("report has %d URLs, want 2: %+v", len(report.URLs), report.URLs)
	}
}

func TestResolveMajorVersionSuffix(t *testing.T) {
	proxy := newServer(t, map[string]string{
		"/example.com/m/@v/list":    "v1.9.0\n",
		"/example.com/m/v2/@v/list": "v2.0.0\nv2.1.0\nv2.1.3\nv2.2.0\n",
	}, nil)
	cfg := &config.Config{Providers: []config.Provider{urlVersion("{go://example.com/m@v2.1}", "/c.yaml")}}
	if _, err := Resolve(context.Background(), cfg, Options{GOPROXY: proxy.URL}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if got := cfg.Providers[0].Versions[0].Name; got != "v2.1.3" {
		t.Errorf("name = %s, want v2.1.3 from example.com/m/v2", got)
	}
}

// TestResolveNamesTheFieldOfEveryProblem puts one problem in each provider
// and expects all of them in one error, each naming its field, while the
// good provider still resolves.
func TestResolveNamesTheFieldOfEveryProblem(t *testing.T) {
	proxy := newServer(t, map[string]string{escaped: list}, nil)
	files := newServer(t, map[string]string{"/c.yaml": "kind: List\n"}, nil)
	closed := closedURL(t)
	cfg := &config.Config{Providers: []config.Provider{
		urlVersion(marker("v1.15"), "/c.yaml"),
		urlVersion("{go://example.com/missing@v1.0}", "/c.yaml"),
		urlVersion("v0.1.0", files.URL+"/missing.yaml"),
		urlVersion("v0.1.0", closed+"/c.yaml"),
		urlVersion(marker("v1.13"), files.URL+"/c.yaml"),
		urlVersion("{go://example.com/m@v1}", "/c.yaml"),
	}}
	report, err := Resolve(context.Background(), cfg, Options{GOPROXY: proxy.URL})
	if err == nil {
		t.Fatal("Resolve succeeded")
	}
	for _, w := range []string{
		`providers[0].versions[0].name: release marker "{go://example.com/Org/provider@v1.15}": no stable release of v1.15 among the 8 versions of example.com/Org/provider that GOPROXY ` + proxy.URL + ` lists (series v1.12, v1.13, v1.14)`,
		`providers[1].versions[0].name: release marker "{go://example.com/missing@v1.0}": GOPROXY ` + proxy.URL + `: 404 Not Found: not found: /example.com/missing/@v/list`,
		`providers[2].versions[0].value: "` + files.URL + `/missing.yaml": 404 Not Found`,
		`providers[3].versions[0].value: "` + closed + `/c.yaml": Get "` + closed + `/c.yaml": dial tcp`,
		`providers[5].versions[0].name: "{go://example.com/m@v1}" is not a release marker`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 5 {
		t.Errorf("%d problems, want 5:\n%v", n, err)
	}
	if got := cfg.Providers[0].Versions[0].Name; got != marker("v1.15") {
		t.Errorf("an unresolved marker was rewritten to %q", got)
	}
	if got := cfg.Providers[4].Versions[0].Name; got != "v1.13.10" || len(report.Markers) != 1 || len(report.URLs) != 1 {
		t.Errorf("the good provider: name %s, report %+v; want it resolved and checked", got, report)
	}
}

func TestResolveHintsAtPrereleases(t *testing.T) {
	proxy := newServer(t, map[string]string{"/example.com/p/@v/list": "v1.0.0\nv1.1.0-rc.0\nv1.1.0-rc.1\n"}, nil)
	cfg := &config.Config{Providers: []config.Provider{urlVersion("{go://example.com/p@v1.1}", "/c.yaml")}}
	_, err := Resolve(context.Background(), cfg, Options{GOPROXY: proxy.URL})
	want := "pre-releases v1.1.0-rc.0, v1.1.0-rc.1 exist: {go://example.com/p@latest-v1.1} includes them"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Resolve = %v, want an error containing %q", err, want)
	}
}

// TestGOPROXYList checks the go command's list semantics: ',' falls
// through on 404 and 410 only, '|' on any error; direct and off cannot
// list.
func TestGOPROXYList(t *testing.T) {
	good := newServer(t, map[string]string{escaped: list}, nil)
	notFound := newServer(t, nil, nil)
	gone := newServer(t, nil, map[string]int{escaped: http.StatusGone})
	broken := newServer(t, nil, map[string]int{escaped: http.StatusInternalServerError})
	closed := closedURL(t)
	tests := []struct {
		name, goproxy string
		want          string // the error, or "" for v1.13.10 from good
	}{
		{name: "404 then ','", goproxy: notFound.URL + "," + good.URL},
		{name: "410 then ','", goproxy: gone.URL + "," + good.URL},
		{name: "500 then '|'", goproxy: broken.URL + "|" + good.URL},
		{name: "unreachable then '|'", goproxy: closed + "|" + good.URL},
		{name: "spaces and empty entries", goproxy: " , " + good.URL + "/ ,"},
		{name: "500 then ','", goproxy: broken.URL + "," + good.URL,
			want: "GOPROXY " + broken.URL + ": 500 Internal Server Error: status 500 for " + "/example.com/!org/provider/@v/list"},
		{name: "unreachable then ','", goproxy: closed + "," + good.URL, want: "GOPROXY " + closed + `: Get "` + closed},
		{name: "404 then direct", goproxy: notFound.URL + ",direct", want: "GOPROXY " + notFound.URL + ": 404 Not Found"},
		{name: "404 then 410", goproxy: notFound.URL + "," + gone.URL, want: "GOPROXY " + notFound.URL + ": 404 Not Found: not found: " + escaped + "; GOPROXY " + gone.URL + ": 410 Gone"},
		{name: "direct", goproxy: "direct", want: `GOPROXY="direct": direct cannot list versions, only a module proxy can`},
		{name: "off before a proxy", goproxy: "off," + good.URL, want: `off cannot list versions`},
		{name: "a file proxy", goproxy: "file:///var/cache/proxy", want: `entry "file:///var/cache/proxy" is not an http(s) proxy URL, direct or off`},
		{name: "nothing", goproxy: " , ", want: `GOPROXY=" , " lists no proxy`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := good.count(escaped)
			cfg := &config.Config{Providers: []config.Provider{urlVersion(marker("v1.13"), "/c.yaml")}}
			_, err := Resolve(context.Background(), cfg, Options{GOPROXY: tt.goproxy})
			if tt.want == "" {
				if err != nil || cfg.Providers[0].Versions[0].Name != "v1.13.10" {
					t.Fatalf("Resolve = %v, name %s; want v1.13.10", err, cfg.Providers[0].Versions[0].Name)
				}
				return
			}
			prefix := `providers[0].versions[0].name: release marker "` + marker("v1.13") + `": `
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Resolve = %v\nwant %s...%s", err, prefix, tt.want)
			}
			if n := good.count(escaped) - before; n != 0 {
				t.Errorf("the proxy after the failing one was asked %d times", n)
			}
		})
	}
}

func TestParseGOPROXY(t *testing.T) {
	got, err := parseGOPROXY("proxy.example.com|http://a.example/p/,direct,https://ignored.example")
	want := []proxy{{url: "https://proxy.example.com", anyError: true}, {url: "http://a.example/p"}, {url: "direct"}}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseGOPROXY = %v, %v; want %v", got, err, want)
	}
}

// TestResolveWithoutNetworkSources makes sure a config with nothing to
// resolve or check makes no request at all: through the client, nor to
// the proxy.
func TestResolveWithoutNetworkSources(t *testing.T) {
	proxy := newServer(t, map[string]string{escaped: list}, nil)
	var viaClient int
	client := &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
		viaClient++
		return nil, errors.New("no request expected")
	})}
	cfg := &config.Config{Providers: []config.Provider{
		urlVersion("v1.13.4", "/components.yaml"),
		{Name: "k", Type: config.BootstrapProvider, Versions: []config.ProviderVersion{{Name: "v0.1.0", Value: "/kustomization", Type: config.KustomizeSource}}},
	}}
	report, err := Resolve(context.Background(), cfg, Options{GOPROXY: proxy.URL, HTTPClient: client})
	if err != nil || len(report.Lines()) != 0 {
		t.Errorf("Resolve = %v, %v; want nothing done", report.Lines(), err)
	}
	if n := proxy.count("") + viaClient; n != 0 {
		t.Errorf("%d requests, want none", n)
	}
	// The same client is used when there is something to do.
	cfg.Providers[0].Versions[0].Value = "https://example.com/c.yaml"
	if _, err := Resolve(context.Background(), cfg, Options{HTTPClient: client}); err == nil || viaClient != 1 {
		t.Errorf("Resolve = %v after %d requests through the client; want its error after 1", err, viaClient)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestResolveIsBounded checks a source that never answers fails at the
// per-request timeout, saying so.
func TestResolveIsBounded(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	cfg := &config.Config{Providers: []config.Provider{
		urlVersion(marker("v1.13"), "/c.yaml"),
		urlVersion("v0.1.0", hang.URL+"/c.yaml"),
	}}
	t0 := time.Now()
	_, err := Resolve(context.Background(), cfg, Options{GOPROXY: hang.URL, Timeout: 100 * time.Millisecond})
	for _, w := range []string{
		"providers[0].versions[0].name: release marker",
		`providers[1].versions[0].value: "` + hang.URL + `/c.yaml": Get`,
		"(no answer within the per-request timeout 100ms)",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Resolve = %v, want it to contain %q", err, w)
		}
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("Resolve took %s with a 100ms timeout", took)
	}
}

func TestCheckURL(t *testing.T) {
	files := newServer(t, map[string]string{"/ok": strings.Repeat("x", 1<<20)}, nil)
	if err := CheckURL(context.Background(), nil, "clusterctl", files.URL+"/ok"); err != nil {
		t.Errorf("CheckURL(ok) = %v", err)
	}
	err := CheckURL(context.Background(), files.Client(), "clusterctl.url", files.URL+"/nope")
	if want := `clusterctl.url: "` + files.URL + `/nope": 404 Not Found: not found: /nope`; err == nil || err.Error() != want {
		t.Errorf("CheckURL(404) = %v, want %s", err, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = CheckURL(ctx, nil, "", files.URL+"/ok")
	if want := `"` + files.URL + `/ok": Get "` + files.URL + `/ok": context canceled`; err == nil || err.Error() != want {
		t.Errorf("CheckURL(canceled) = %v, want %s", err, want)
	}
}
