// Package mirror serves images the engine holds to the nodes of workload
// clusters, under the names their pods pull them by: an OCI registry in
// the harness's process (go-containerregistry's pkg/registry) per
// upstream registry host, listening on the engine network's gateway, and,
// in each node, a containerd hosts.toml naming it as that host's mirror.
//
// The nodes reach no registry here, so images are loaded into them
// beforehand, and a pod whose imagePullPolicy is IfNotPresent runs. A
// pod or image volume with Always makes containerd resolve the name at
// the registry whatever the node holds, and fails. Kubernetes'
// conformance suite has two such tests (the PodCertificate mTLS one, the
// image volume one); with the mirror, their pulls are real pulls, of the
// images the engine holds.
//
// Ours because what exists does not fit: kind's local-registry recipe
// runs a registry container from an image a registry serves, and
// pushes through the engine, whose daemon would need each registry
// configured as insecure. Here the registry is a library in the process
// that needs it, gone with it, and the images go from the engine's
// archive straight into it.
package mirror

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// ConfigDir is containerd's registry config_path in capd-e2e's node
// images (factory/kindbase.RegistryConfigDir): one directory per
// registry host, each with a hosts.toml.
const ConfigDir = "/etc/containerd/certs.d"

// Engine is what the mirror needs of the container engine.
type Engine interface {
	SaveImages(ctx context.Context, refs ...string) (io.ReadCloser, error)
	CopyTo(ctx context.Context, nameOrID, dir string, content io.Reader) error
}

var _ Engine = runtime.Runtime(nil)

// Input says what to serve, and where.
type Input struct {
	// Runtime holds the images. Required.
	Runtime Engine
	// Images are the references to serve, each with its registry host
	// (registry.k8s.io/e2e-test-images/agnhost:2.66.1) and a tag, not a
	// digest: they are served under that name, and the engine's copy
	// may not match a digest upstream gave. Required.
	Images []string
	// Address is the IP address the registries listen on: one the nodes
	// reach, the gateway of their network (runtime.NetworkEndpoint's
	// GatewayIPv4). Required.
	Address string
}

// Mirror is the running registries. Close stops them.
type Mirror struct {
	rt      Engine
	hosts   map[string]*host // by upstream registry host
	pending sync.WaitGroup
}

type host struct {
	url    string // http://address:port
	server *http.Server
	mu     sync.Mutex
	pulls  map[string]int // manifest reads, by repository:reference
}

// Start serves in.Images: one registry per registry host among them, on
// in.Address and a free port, holding those images as the engine saves
// them. It returns when every image is in; on an error nothing is left
// running.
func Start(ctx context.Context, in Input) (_ *Mirror, err error) {
	refs, err := in.validate()
	if err != nil {
		return nil, err
	}
	m := &Mirror{rt: in.Runtime, hosts: map[string]*host{}}
	defer func() {
		if err != nil {
			_ = m.Close() // undoing a failed start: err is the failure to report
		}
	}()
	for _, r := range refs {
		reg := r.Context().RegistryStr()
		if m.hosts[reg] != nil {
			continue
		}
		if err := m.serve(reg, in.Address); err != nil {
			return nil, err
		}
	}
	if err := m.load(ctx, refs); err != nil {
		return nil, err
	}
	return m, nil
}

func (in Input) validate() ([]name.Tag, error) {
	var errs []error
	if in.Runtime == nil {
		errs = append(errs, errors.New("Runtime is required"))
	}
	if len(in.Images) == 0 {
		errs = append(errs, errors.New("Images is required"))
	}
	if ip := net.ParseIP(in.Address); ip == nil {
		errs = append(errs, fmt.Errorf("Address %q is not an IP address", in.Address))
	}
	var refs []name.Tag
	for _, s := range in.Images {
		if strings.Contains(s, "@") {
			errs = append(errs, fmt.Errorf("Images: %q has a digest: give a tag", s))
			continue
		}
		t, err := name.NewTag(s, name.StrictValidation)
		if err != nil {
			errs = append(errs, fmt.Errorf("Images: %q: %w (a full reference with a registry host and a tag is needed)", s, err))
			continue
		}
		refs = append(refs, t)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("mirror: %w", errors.Join(errs...))
	}
	return refs, nil
}

// serve starts the registry for upstream host reg on address and a free
// port; Close stops it.
func (m *Mirror) serve(reg, address string) error {
	l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return fmt.Errorf("mirror: listen on %s (the nodes' network gateway must be an address of this host): %w", address, err)
	}
	h := &host{url: "http://" + l.Addr().String(), pulls: map[string]int{}}
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h.server = &http.Server{
		Handler:           h.count(handler),
		ReadHeaderTimeout: 30 * time.Second,
	}
	m.pending.Add(1)
	go func() {
		defer m.pending.Done()
		_ = h.server.Serve(l) // ErrServerClosed once Close is called
	}()
	m.hosts[reg] = h
	return nil
}

// count records each read of a manifest: containerd resolves a tag with
// a HEAD, then fetches the manifest by digest with a GET.
func (h *host) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			if repo, ref, ok := manifestPath(r.URL.Path); ok {
				h.mu.Lock()
				h.pulls[repo+":"+ref]++
				h.mu.Unlock()
			}
		}
		next.ServeHTTP(w, r)
	})
}

// manifestPath splits /v2/<repo>/manifests/<ref>.
func manifestPath(p string) (repo, ref string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/manifests/")
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+len("/manifests/"):], true
}

// load saves refs from the engine in one archive and writes each image
// into its host's registry, under its repository and tag.
func (m *Mirror) load(ctx context.Context, refs []name.Tag) error {
	strs := make([]string, len(refs))
	for i, r := range refs {
		strs[i] = r.String()
	}
	rc, err := m.rt.SaveImages(ctx, strs...)
	if err != nil {
		return fmt.Errorf("mirror: save %s from the engine: %w", strings.Join(strs, ", "), err)
	}
	// tarball.Image reads the archive more than once: keep it in a file.
	f, err := os.CreateTemp("", "capd-e2e-mirror-*.tar")
	if err != nil {
		_ = rc.Close() // the save stream, unread: err is the failure to report
		return fmt.Errorf("mirror: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }() // a temporary archive; removing it is tidying
	_, err = io.Copy(f, rc)
	err = errors.Join(err, rc.Close(), f.Close())
	if err != nil {
		return fmt.Errorf("mirror: save images from the engine: %w", err)
	}
	open := func() (io.ReadCloser, error) { return os.Open(f.Name()) }
	for _, r := range refs {
		img, err := tarball.Image(open, &r)
		if err != nil {
			return fmt.Errorf("mirror: %s in the engine's archive: %w", r, err)
		}
		h := m.hosts[r.Context().RegistryStr()]
		dst, err := name.NewTag(strings.TrimPrefix(h.url, "http://")+"/"+r.RepositoryStr()+":"+r.TagStr(), name.Insecure)
		if err != nil {
			return fmt.Errorf("mirror: %s: %w", r, err)
		}
		if err := remote.Write(dst, img, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("mirror: write %s into the mirror of %s: %w", r, r.Context().RegistryStr(), err)
		}
	}
	// Loading is not a pull.
	for _, h := range m.hosts {
		h.mu.Lock()
		clear(h.pulls)
		h.mu.Unlock()
	}
	return nil
}

// Hosts returns each upstream registry host the mirror serves, with its
// mirror's URL (http://address:port).
func (m *Mirror) Hosts() map[string]string {
	out := make(map[string]string, len(m.hosts))
	for reg, h := range m.hosts {
		out[reg] = h.url
	}
	return out
}

// Pulls returns how many times each manifest was read since Start, by
// registry/repository:reference (a tag when containerd resolved it, a
// digest when it fetched it).
func (m *Mirror) Pulls() map[string]int {
	out := map[string]int{}
	for reg, h := range m.hosts {
		h.mu.Lock()
		for ref, n := range h.pulls {
			out[reg+"/"+ref] = n
		}
		h.mu.Unlock()
	}
	return out
}

// HostsTOML is containerd's hosts.toml for upstream registry host
// upstream, with mirrorURL (plain HTTP) tried first for pulls and
// resolution: what the mirror does not hold, containerd asks upstream.
func HostsTOML(upstream, mirrorURL string) string {
	server := "https://" + upstream
	if upstream == name.DefaultRegistry {
		server = "https://registry-1.docker.io"
	}
	return fmt.Sprintf("# Written by capd-e2e (framework/mirror).\nserver = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", server, mirrorURL)
}

// HostDir is the directory under ConfigDir containerd reads for
// registry host reg: the host itself, docker.io for Docker Hub (whose
// references name it index.docker.io).
func HostDir(reg string) string {
	if reg == name.DefaultRegistry {
		return "docker.io"
	}
	return reg
}

// Configure names the mirror in each node, a container of the engine
// Start was given: a hosts.toml per registry host under ConfigDir, which
// containerd reads at the next pull. A node
// whose containerd has another config_path ignores it; nodes made from
// capd-e2e's node images do not.
func (m *Mirror) Configure(ctx context.Context, nodes ...string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := path.Base(ConfigDir)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}); err != nil {
		return err
	}
	regs := make([]string, 0, len(m.hosts))
	for reg := range m.hosts {
		regs = append(regs, reg)
	}
	slices.Sort(regs)
	for _, reg := range regs {
		content := HostsTOML(reg, m.hosts[reg].url)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/" + HostDir(reg) + "/", Mode: 0o755}); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dir + "/" + HostDir(reg) + "/hosts.toml", Mode: 0o644, Size: int64(len(content))}); err != nil {
			return err
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	var errs []error
	for _, n := range nodes {
		if err := m.rt.CopyTo(ctx, n, path.Dir(ConfigDir), bytes.NewReader(buf.Bytes())); err != nil {
			errs = append(errs, fmt.Errorf("mirror: name the mirror in node %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Close stops the registries and waits for them.
func (m *Mirror) Close() error {
	var errs []error
	for _, h := range m.hosts {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := h.server.Shutdown(ctx); err != nil {
			errs = append(errs, h.server.Close())
		}
		cancel()
	}
	m.pending.Wait()
	return errors.Join(errs...)
}
