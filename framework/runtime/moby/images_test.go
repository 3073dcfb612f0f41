package moby

import (
	"archive/tar"
	"bytes"
	"slices"
	"testing"
)

func TestPodmanLocalhostName(t *testing.T) {
	for tag, want := range map[string]bool{
		"busybox:1": true,
		"capd-e2e/cloud-controller-manager:v0.36.3": true,
		"kindest/node:v1.36.3":                      true,
		"registry.k8s.io/pause:3.10.2":              false,
		"127.0.0.1:5001/x/y:1":                      false,
		"localhost:5001/x:1":                        false,
		"localhost/x:1":                             false,
	} {
		if got := podmanLocalhostName(tag); got != want {
			t.Errorf("podmanLocalhostName(%q) = %v, want %v", tag, got, want)
		}
	}
}

func TestArchiveTags(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"blobs/sha256/aa", "layer"},
		{"manifest.json", `[{"Config":"c.json","RepoTags":["capd-e2e/a:1","registry.k8s.io/b:2"]},{"RepoTags":["c:3"]}]`},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if got := archiveTags(&buf); !slices.Equal(got, []string{"capd-e2e/a:1", "registry.k8s.io/b:2", "c:3"}) {
		t.Errorf("archiveTags = %v", got)
	}
	if got := archiveTags(bytes.NewReader([]byte("not a tar"))); got != nil {
		t.Errorf("archiveTags(garbage) = %v, want nil", got)
	}
}
