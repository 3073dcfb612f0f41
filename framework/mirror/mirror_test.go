package mirror

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/pelletier/go-toml/v2"
)

// archiveEngine saves images as the engine does (a docker save archive)
// and records what is copied into containers.
type archiveEngine struct {
	images  map[string]v1.Image
	saveErr error
	copied  map[string]map[string]string // node -> path -> content
}

func (e *archiveEngine) SaveImages(_ context.Context, refs ...string) (io.ReadCloser, error) {
	if e.saveErr != nil {
		return nil, e.saveErr
	}
	m := map[name.Reference]v1.Image{}
	for _, r := range refs {
		img, ok := e.images[r]
		if !ok {
			return nil, errors.New("No such image: " + r)
		}
		t, err := name.NewTag(r)
		if err != nil {
			return nil, err
		}
		m[t] = img
	}
	var buf bytes.Buffer
	if err := tarball.MultiRefWrite(m, &buf); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

func (e *archiveEngine) CopyTo(_ context.Context, node, dir string, content io.Reader) error {
	if e.copied == nil {
		e.copied = map[string]map[string]string{}
	}
	files := map[string]string{}
	tr := tar.NewReader(content)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		files[dir+"/"+h.Name] = string(b)
	}
	e.copied[node] = files
	return nil
}

func randomImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestStartServesTheEngineImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agnhost, kitten, hub := randomImage(t), randomImage(t), randomImage(t)
	e := &archiveEngine{images: map[string]v1.Image{
		"registry.k8s.io/e2e-test-images/agnhost:2.66.1": agnhost,
		"registry.k8s.io/e2e-test-images/kitten:1.8":     kitten,
		"docker.io/library/nginx:1.27":                   hub,
	}}
	m, err := Start(ctx, Input{Runtime: e, Address: "127.0.0.1", Images: []string{
		"registry.k8s.io/e2e-test-images/agnhost:2.66.1", "registry.k8s.io/e2e-test-images/kitten:1.8", "docker.io/library/nginx:1.27",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}()
	hosts := m.Hosts()
	if len(hosts) != 2 || hosts["registry.k8s.io"] == "" || hosts["index.docker.io"] == "" || hosts["registry.k8s.io"] == hosts["index.docker.io"] {
		t.Fatalf("want one mirror each for registry.k8s.io and Docker Hub, got %v", hosts)
	}
	for ref, want := range map[string]v1.Image{
		hosts["registry.k8s.io"] + "/e2e-test-images/agnhost:2.66.1": agnhost,
		hosts["registry.k8s.io"] + "/e2e-test-images/kitten:1.8":     kitten,
		hosts["index.docker.io"] + "/library/nginx:1.27":             hub,
	} {
		r, err := name.NewTag(strings.TrimPrefix(ref, "http://"), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(r, remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		gc, _ := got.ConfigName()
		wc, _ := want.ConfigName()
		if gc != wc {
			t.Errorf("%s: config %s, want %s", ref, gc, wc)
		}
	}
	// A name the mirror does not hold is not found, not another image.
	r, _ := name.NewTag(strings.TrimPrefix(hosts["registry.k8s.io"], "http://")+"/e2e-test-images/agnhost:2.55", name.Insecure)
	if _, err := remote.Image(r, remote.WithContext(ctx)); err == nil {
		t.Error("agnhost:2.55 was served, but was never loaded")
	}
	// A resolution, as containerd's: a HEAD of the tag.
	k, _ := name.NewTag(strings.TrimPrefix(hosts["registry.k8s.io"], "http://")+"/e2e-test-images/kitten:1.8", name.Insecure)
	if _, err := remote.Head(k, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	pulls := m.Pulls()
	if pulls["registry.k8s.io/e2e-test-images/agnhost:2.66.1"] != 1 || pulls["index.docker.io/library/nginx:1.27"] != 1 || pulls["registry.k8s.io/e2e-test-images/kitten:1.8"] != 2 {
		t.Errorf("pulls: %v; want one read of agnhost:2.66.1 and of nginx:1.27, two of kitten:1.8 (loading is not a read)", pulls)
	}
}

func TestStartRejects(t *testing.T) {
	ctx := context.Background()
	e := &archiveEngine{}
	for name, tc := range map[string]struct {
		in   Input
		want []string
	}{
		"nothing":      {Input{}, []string{"Runtime is required", "Images is required", `Address "" is not an IP address`}},
		"digest":       {Input{Runtime: e, Address: "127.0.0.1", Images: []string{"registry.k8s.io/a@sha256:" + strings.Repeat("0", 64)}}, []string{"has a digest"}},
		"no tag":       {Input{Runtime: e, Address: "127.0.0.1", Images: []string{"registry.k8s.io/a"}}, []string{`"registry.k8s.io/a"`}},
		"address name": {Input{Runtime: e, Address: "gateway", Images: []string{"registry.k8s.io/a:1"}}, []string{`Address "gateway"`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Start(ctx, tc.in)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestStartFailureLeavesNothing: a closed mirror answers no more, and an
// engine that cannot save the images fails Start with its error, naming
// them (Start closes what it had started).
func TestStartFailureLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := &archiveEngine{saveErr: errors.New("daemon gone")}
	m := &Mirror{hosts: map[string]*host{}}
	if err := m.serve("registry.k8s.io", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	url := m.hosts["registry.k8s.io"].url
	if resp, err := http.Get(url + "/v2/"); err != nil {
		t.Fatalf("a started mirror does not answer: %v", err)
	} else {
		_ = resp.Body.Close()
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/v2/"); err == nil {
		t.Fatal("a closed mirror still answers")
	}
	_, err := Start(ctx, Input{Runtime: e, Address: "127.0.0.1", Images: []string{"registry.k8s.io/e2e/a:1"}})
	if err == nil || !strings.Contains(err.Error(), "daemon gone") || !strings.Contains(err.Error(), "registry.k8s.io/e2e/a:1") {
		t.Fatalf("got %v, want the engine's error naming the image", err)
	}
}

func TestConfigure(t *testing.T) {
	e := &archiveEngine{}
	m := &Mirror{rt: e, hosts: map[string]*host{
		"registry.k8s.io": {url: "http://172.18.0.1:40001"},
		"index.docker.io": {url: "http://172.18.0.1:40002"},
	}}
	if err := m.Configure(context.Background(), "cp-1", "md-1"); err != nil {
		t.Fatal(err)
	}
	if len(e.copied) != 2 {
		t.Fatalf("copied into %d nodes, want 2", len(e.copied))
	}
	files := e.copied["md-1"]
	var cfg struct {
		Server string `toml:"server"`
		Host   map[string]struct {
			Capabilities []string `toml:"capabilities"`
		} `toml:"host"`
	}
	if err := toml.Unmarshal([]byte(files["/etc/containerd/certs.d/registry.k8s.io/hosts.toml"]), &cfg); err != nil {
		t.Fatalf("hosts.toml: %v\n%v", err, files)
	}
	if caps := cfg.Host["http://172.18.0.1:40001"].Capabilities; cfg.Server != "https://registry.k8s.io" || strings.Join(caps, ",") != "pull,resolve" {
		t.Errorf("registry.k8s.io hosts.toml: %+v", cfg)
	}
	if !strings.Contains(files["/etc/containerd/certs.d/docker.io/hosts.toml"], `server = "https://registry-1.docker.io"`) {
		t.Errorf("Docker Hub's hosts.toml not under docker.io: %v", files)
	}
}

func TestManifestPath(t *testing.T) {
	for p, want := range map[string]string{
		"/v2/e2e-test-images/agnhost/manifests/2.66.1": "e2e-test-images/agnhost 2.66.1",
		"/v2/a/manifests/sha256:abc":                   "a sha256:abc",
		"/v2/e2e-test-images/agnhost/blobs/sha256:abc": "",
		"/v2/": "",
		"/other/e2e-test-images/agnhost/manifests/2.55": "",
	} {
		repo, ref, ok := manifestPath(p)
		got := ""
		if ok {
			got = repo + " " + ref
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", p, got, want)
		}
	}
}
