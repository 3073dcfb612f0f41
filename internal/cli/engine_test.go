package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

func TestVersionLineTellsPodmanFromDocker(t *testing.T) {
	if got := versionLine(runtime.EngineInfo{Version: "4.3.1", Podman: true, Endpoint: "unix:///run/podman/podman.sock"}); got != "podman 4.3.1 unix:///run/podman/podman.sock" {
		t.Errorf("Podman: %q", got)
	}
	if got := versionLine(runtime.EngineInfo{Version: "26.1.5", Endpoint: "unix:///var/run/docker.sock"}); got != "docker 26.1.5 unix:///var/run/docker.sock" {
		t.Errorf("Docker: %q", got)
	}
}

func TestDumpWritesEachFile(t *testing.T) {
	f := fake.New()
	f.InfoResult = runtime.EngineInfo{Endpoint: "unix:///run/podman/podman.sock", Version: "4.3.1", Podman: true}
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{ID: "0123456789abcdef", Name: "capd-e2e-x-control-plane", Image: "kindest/node:v1.36.3",
		Labels: runtime.RunLabels("run1", "kind", nil)}})
	f.AddImage(runtime.Image{ID: "sha256:feedfacecafe0000", RepoTags: []string{"kindest/node:v1.36.3"}, Size: 900 << 20})
	now := time.Now()
	f.EventsResult = []runtime.Event{
		{Time: now.Add(-time.Hour), Type: "container", Action: "create", ID: "old"},
		{Time: now.Add(-time.Second), Type: "container", Action: "die", ID: "0123456789abcdef", Attributes: map[string]string{"name": "capd-e2e-x-control-plane", "exitCode": "137"}},
	}
	dir := t.TempDir()
	if err := dump(context.Background(), f, dir, now.Add(-time.Minute).Unix()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"engine-info.txt":   {"engine: Podman 4.3.1", "endpoint: unix:///run/podman/podman.sock"},
		"engine-ps.txt":     {"0123456789ab", "capd-e2e-x-control-plane", "kindest/node:v1.36.3", "run1"},
		"engine-images.txt": {"feedfacecafe", "kindest/node:v1.36.3", "900 MB"},
		"engine-events.log": {"container die 0123456789ab (exitCode=137, name=capd-e2e-x-control-plane)"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q:\n%s", name, w, b)
			}
		}
		if name == "engine-events.log" && strings.Contains(string(b), "old") {
			t.Errorf("engine-events.log has an event before -since:\n%s", b)
		}
	}
}

func TestDumpKeepsWhatItCouldWrite(t *testing.T) {
	f := fake.New()
	if err := f.Close(); err != nil { // every call now fails
		t.Fatal(err)
	}
	dir := t.TempDir()
	err := dump(context.Background(), f, dir, 1)
	if err == nil || !strings.Contains(err.Error(), "engine-ps.txt") {
		t.Errorf("dump on a dead engine = %v; want errors naming the files", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "engine-info.txt"))
	if !strings.Contains(string(b), "error:") {
		t.Errorf("engine-info.txt does not say why it is empty: %q", b)
	}
}
