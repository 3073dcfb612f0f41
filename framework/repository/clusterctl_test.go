package repository

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/internal/gomod"
)

// fakeClusterctl is a stand-in binary: it answers `version -o short` as a
// release's clusterctl does.
const fakeClusterctl = "#!/bin/sh\necho v1.13.4\n"

// TestPreviousClusterctlDownloadsOnceFromItsURL serves a clusterctl
// "binary" over HTTP, as a release page would: {OS} and {ARCH} are
// replaced, the file is fetched once per URL and then taken from the
// cache, and an answer other than 200 fails naming the field and the URL.
func TestPreviousClusterctlDownloadsOnceFromItsURL(t *testing.T) {
	t.Setenv(gomod.EnvCacheDir, t.TempDir())
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.URL.Path != "/v1.13.4/clusterctl-"+runtime.GOOS+"-"+runtime.GOARCH {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(fakeClusterctl))
	}))
	defer srv.Close()
	cfg := &config.Config{}
	cfg.Build.ClusterAPI.Previous = &config.PreviousClusterAPI{Version: "v1.13.4", Clusterctl: srv.URL + "/v1.13.4/clusterctl-{OS}-{ARCH}"}

	bin, err := PreviousClusterctl(context.Background(), cfg)
	if err != nil {
		t.Fatalf("PreviousClusterctl: %v", err)
	}
	again, err := PreviousClusterctl(context.Background(), cfg)
	if err != nil || again != bin {
		t.Fatalf("second PreviousClusterctl = %q, %v; want %q from the cache", again, err, bin)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("%d requests for two calls, want 1", n)
	}

	cfg.Build.ClusterAPI.Previous.Clusterctl = srv.URL + "/v1.13.5/clusterctl-{OS}-{ARCH}"
	_, err = PreviousClusterctl(context.Background(), cfg)
	want := `build.clusterAPI.previous.clusterctl: "` + srv.URL + "/v1.13.5/clusterctl-" + runtime.GOOS + "-" + runtime.GOARCH + `": 404 Not Found`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("PreviousClusterctl of a missing file: %v, want %q", err, want)
	}
}

// TestPreviousClusterctlRefusesWhatDoesNotRun: a file that is not a
// program fails the check that it runs, naming the field.
func TestPreviousClusterctlRefusesWhatDoesNotRun(t *testing.T) {
	t.Setenv(gomod.EnvCacheDir, t.TempDir())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>not a binary</html>"))
	}))
	defer srv.Close()
	cfg := &config.Config{}
	cfg.Build.ClusterAPI.Previous = &config.PreviousClusterAPI{Version: "v1.13.4", Clusterctl: srv.URL + "/clusterctl"}
	_, err := PreviousClusterctl(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "build.clusterAPI.previous.clusterctl: ") || !strings.Contains(err.Error(), "does not run") {
		t.Errorf("PreviousClusterctl of an HTML page: %v, want an error naming the field", err)
	}
}
