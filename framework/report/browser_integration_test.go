package report

import (
	"context"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser finds a Chromium or Chrome; the test fails without one: make
// test installs Debian's chromium (scripts/install-deps.sh --browser).
func browser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no headless browser: install Debian's chromium (scripts/install-deps.sh --browser) or set CHROMIUM")
	return ""
}

// seen is what the browser shows of a report.
type seen struct {
	Title string
	// Text is what a person sees: the body's rendered text (closed
	// <details> and hidden elements excluded).
	Text string
	// Bars are the timeline's bars as laid out.
	Bars       []bar
	Links      []string
	Screenshot []byte
}

// bar is a timeline bar and its track, as laid out, in CSS pixels.
type bar struct {
	Phase       string  `json:"phase"`
	Width       float64 `json:"width"`
	TrackWidth  float64 `json:"trackWidth"`
	Left        float64 `json:"left"`
	TrackLeft   float64 `json:"trackLeft"`
	BarClass    string  `json:"barClass"`
	VisibleArea float64 `json:"visibleArea"`
}

func open(t *testing.T, page string) seen {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser(t)),
		chromedp.NoSandbox, // as root in CI
		chromedp.WindowSize(1280, 1000),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()
	fail := func(step string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("open %s in %s: %s: %v", page, browser(t), step, err)
		}
	}
	fail("navigate", chromedp.Do(ctx, chromedp.Navigate("file://"+page)))
	var s seen
	var err error
	s.Title, err = chromedp.Run(ctx, chromedp.Title())
	fail("title", err)
	s.Text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	fail("text", err)
	s.Bars, err = chromedp.Run(ctx, chromedp.Evaluate[[]bar](`Array.from(document.querySelectorAll('.bar')).map(b => {
		const r = b.getBoundingClientRect(), tr = b.parentElement.getBoundingClientRect();
		return {phase: b.dataset.phase, width: r.width, trackWidth: tr.width, left: r.left, trackLeft: tr.left,
			barClass: b.className, visibleArea: r.width * r.height};
	})`))
	fail("bars", err)
	s.Links, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))`))
	fail("links", err)
	s.Screenshot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	fail("screenshot", err)
	return s
}

// keepScreenshot writes the screenshot into $ARTIFACTS/report-browser-test
// (or the test's temporary folder) and logs where.
func keepScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := t.TempDir()
	if a := os.Getenv("ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "report-browser-test")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

// checkLinks fails for a link that does not resolve to a file of the
// artifacts folder, or an anchor that names no element.
func checkLinks(t *testing.T, root string, s seen, html string) {
	t.Helper()
	if len(s.Links) == 0 {
		t.Fatal("the report has no links")
	}
	for _, l := range s.Links {
		if strings.HasPrefix(l, "#") {
			if !strings.Contains(html, `id="`+l[1:]+`"`) {
				t.Errorf("anchor %s names no element", l)
			}
			continue
		}
		u, err := url.Parse(l)
		if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(u.Path, "/") {
			t.Errorf("link %q is not relative to the artifacts folder", l)
			continue
		}
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(u.Path)))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("link %q does not resolve to a file: %v", l, err)
		}
	}
}

func TestIntegrationReportInBrowserFailedRun(t *testing.T) {
	root, rep := fixture(t, true)
	if err := Write(Input{Report: rep, ArtifactFolder: root, RunID: "f41l3d", Versions: map[string]string{"cluster-api-version": "v1.14.2"}}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(root, HTMLFile)
	html, _ := os.ReadFile(page)
	s := open(t, page)
	keepScreenshot(t, "failed-run.png", s.Screenshot)

	if !strings.Contains(s.Title, "capd-e2e FAILED") || !strings.Contains(s.Title, "f41l3d") {
		t.Errorf("title %q", s.Title)
	}
	for _, want := range []string{
		"Why it failed",
		"quick-start failed in phase: " + failedPhase,
		"Available=False (NotAvailable)",
		brokenMachine + ": exited, exit code 137, OOM killed",
		"Clusters and machines",
		"cluster-api-version",
	} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("the page does not show %q; it shows:\n%s", want, s.Text)
		}
	}
	// Setup's 3 phases and the spec's 4, each a visible bar, drawn to
	// scale: the spec's failing phase is 2 of its 4 minutes, from +1m.
	if len(s.Bars) != 7 {
		t.Fatalf("%d bars, want 7", len(s.Bars))
	}
	for _, b := range s.Bars {
		if b.VisibleArea <= 0 {
			t.Errorf("bar %q is not visible: %+v", b.Phase, b)
		}
		if b.Phase == failedPhase {
			if !strings.Contains(b.BarClass, "failed") {
				t.Errorf("the failing phase's bar has class %q", b.BarClass)
			}
			if got := b.Width / b.TrackWidth; math.Abs(got-0.5) > 0.01 {
				t.Errorf("the failing phase's bar is %.3f of its track, want 0.5", got)
			}
			if got := (b.Left - b.TrackLeft) / b.TrackWidth; math.Abs(got-0.25) > 0.01 {
				t.Errorf("the failing phase's bar starts at %.3f of its track, want 0.25", got)
			}
		}
	}
	checkLinks(t, root, s, string(html))
}

func TestIntegrationReportInBrowserPassedRun(t *testing.T) {
	root, rep := fixture(t, false)
	if err := Write(Input{Report: rep, ArtifactFolder: root, RunID: "p4553d"}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(root, HTMLFile)
	html, _ := os.ReadFile(page)
	s := open(t, page)
	keepScreenshot(t, "passed-run.png", s.Screenshot)

	if !strings.Contains(s.Title, "capd-e2e PASSED") {
		t.Errorf("title %q", s.Title)
	}
	if strings.Contains(s.Text, "Why it failed") {
		t.Errorf("a passed run shows a failure:\n%s", s.Text)
	}
	for _, want := range []string{"all 1 specs passed", "Ready=True", brokenMachine} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("the page does not show %q; it shows:\n%s", want, s.Text)
		}
	}
	if len(s.Bars) != 7 {
		t.Errorf("%d bars, want 7", len(s.Bars))
	}
	checkLinks(t, root, s, string(html))
}
