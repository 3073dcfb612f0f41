package goimages

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/capd-e2e/capd-e2e/factory/buildspec"
	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
	"github.com/capd-e2e/capd-e2e/internal/cputime"
)

// BusyBox is compiled here from BusyBox's own release, as the image
// upstream mirrors (Docker's busybox, built with BusyBox's default
// configuration) is, rather than taken from Debian's busybox-static:
// Debian patches ash, for its installer, to drop environment variables
// whose names are not shell identifiers (debian/patches/revert-9c143ce…),
// and Kubernetes' conformance tests run `sh -c env` in this image and
// expect a variable such as "data-1" in its output (Secrets' and
// ConfigMaps' "consumable via the environment" tests).
//
// The source is the release tarball as Debian's archive serves it (the
// .orig.tar.bz2 of Debian's source package is BusyBox's tarball,
// unchanged), checked against the digest below.

// busyboxSources are the SHA-256 digests of the BusyBox release tarballs
// the factory builds, by version.
var busyboxSources = map[string]string{
	"1.37.0": "3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4",
}

// busyboxURL is where Debian's archive (mirror) serves BusyBox version's
// release tarball.
func busyboxURL(mirror, version string) string {
	return strings.TrimSuffix(mirror, "/") + "/pool/main/b/busybox/busybox_" + version + ".orig.tar.bz2"
}

// buildBusyBox builds busybox as upstream's image is: BusyBox's default
// configuration, static, at /bin/busybox with a link per applet in /bin,
// on nothing.
func (b *Builders) buildBusyBox(ctx context.Context, s plan.Step) error {
	if arch := s.Inputs[plan.InputArch]; arch != "" && arch != goruntime.GOARCH {
		return fmt.Errorf("busybox: compiling for %s on %s is not supported", arch, goruntime.GOARCH)
	}
	version, mirror := s.Inputs[plan.InputSource], s.Inputs[plan.InputMirror]
	want, ok := busyboxSources[version]
	if !ok {
		return fmt.Errorf("busybox:%s: no digest for BusyBox %q's source (the factory knows %s)",
			s.Inputs[plan.InputTag], version, strings.Join(slices.Sorted(maps.Keys(busyboxSources)), ", "))
	}
	dir, err := os.MkdirTemp(b.TempDir, "capd-e2e-busybox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src")
	if err := fetchBusyBox(ctx, busyboxURL(mirror, version), want, src); err != nil {
		return err
	}
	if err := b.compileBusyBox(ctx, src); err != nil {
		return err
	}
	bin := filepath.Join(src, "busybox")
	// The applets this busybox has, from itself: a static binary, run on
	// the host like any build tool.
	cmd := exec.CommandContext(ctx, bin, "--list")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cputime.Run(ctx, cmd); err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	var links []oci.File
	for _, applet := range strings.Fields(out.String()) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			links = append(links, oci.File{Path: "bin/" + applet, Link: "busybox"})
		}
	}
	if len(links) < 100 {
		return fmt.Errorf("busybox --list: %d applets, want a full busybox", len(links))
	}
	return b.image(ctx, s, imageContent{
		files:      map[string]string{"/bin/busybox": bin},
		scratchEtc: true,
		extra:      links,
		config: oci.Config{Cmd: []string{"sh"}, Labels: map[string]string{
			"org.opencontainers.image.version": s.Inputs[plan.InputTag], "org.opencontainers.image.title": buildspec.TestImageBusyBox}},
	})
}

// fetchBusyBox downloads the tarball at url, checks its SHA-256 against
// want before anything is unpacked, and unpacks its top directory's
// content into dst.
func fetchBusyBox(ctx context.Context, url, want, dst string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("busybox source: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("busybox source: GET %s: %s", url, resp.Status)
	}
	// A few MB: checked whole in memory, so nothing unverified is read.
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("busybox source: GET %s: %w", url, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != want {
		return fmt.Errorf("busybox source: %s has sha256 %s, want %s", url, got, want)
	}
	return untarStrip(bzip2.NewReader(bytes.NewReader(data)), dst)
}

// untarStrip unpacks a tar stream's regular files, directories and
// symbolic links into dst, without the first path element; a path that
// would leave dst is an error (the tarball is checked against its digest
// first, so its links are trusted).
func untarStrip(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("busybox source: %w", err)
		}
		if !filepath.IsLocal(h.Name) || slices.Contains(strings.Split(h.Name, "/"), "..") {
			return fmt.Errorf("busybox source: %q leaves the source directory", h.Name)
		}
		_, rel, ok := strings.Cut(filepath.Clean(h.Name), "/")
		if !ok || rel == "" {
			continue
		}
		p := filepath.Join(dst, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Symlink(h.Linkname, p)
			}
		case tar.TypeReg:
			err = writeFile(p, tr, os.FileMode(h.Mode)&0o755|0o600)
		}
		if err != nil {
			return fmt.Errorf("busybox source: %w", err)
		}
	}
}

func writeFile(p string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// busyboxConfig are the changes to BusyBox's default configuration:
// static, as Docker's image is, and without tc, whose CBQ code no longer
// compiles against current kernel headers (Debian and Docker's build
// leave it out too).
var busyboxConfig = map[string]string{"CONFIG_STATIC": "y", "CONFIG_TC": ""}

// compileBusyBox configures and compiles the BusyBox source in src,
// holding a go command's slot: make keeps every CPU busy as a go build
// does.
func (b *Builders) compileBusyBox(ctx context.Context, src string) error {
	cc := b.CC
	if cc == "" {
		cc = "gcc"
	}
	mk := func(target string, stdin io.Reader) error {
		cmd := exec.CommandContext(ctx, "make", "-j"+strconv.Itoa(goruntime.NumCPU()), "CC="+cc, "HOSTCC="+cc, target)
		cmd.Dir = src
		// A fixed build date, so that the banner does not change.
		cmd.Env = append(os.Environ(), "KCONFIG_NOTIMESTAMP=1", "SOURCE_DATE_EPOCH=0")
		cmd.Stdin = stdin
		var output bytes.Buffer
		cmd.Stdout, cmd.Stderr = &output, &output
		if err := cputime.Run(ctx, cmd); err != nil {
			return fmt.Errorf("busybox: make %s: %w\n%s", target, err, lastLines(output.String(), 30))
		}
		return nil
	}
	return b.Go.Slots.Hold(ctx, func() error {
		if err := mk("defconfig", nil); err != nil {
			return err
		}
		if err := editConfig(filepath.Join(src, ".config"), busyboxConfig); err != nil {
			return err
		}
		// oldconfig asks about nothing new here; its answers, if any,
		// are the defaults.
		if err := mk("oldconfig", strings.NewReader(strings.Repeat("\n", 100))); err != nil {
			return err
		}
		return mk("busybox", nil)
	})
}

// editConfig sets each key of set in a Kconfig file: "" turns it off.
func editConfig(path string, set map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	seen := map[string]bool{}
	for i, l := range lines {
		for k, v := range set {
			if l == k+"=y" || l == "# "+k+" is not set" || strings.HasPrefix(l, k+"=") {
				seen[k] = true
				if v == "" {
					lines[i] = "# " + k + " is not set"
				} else {
					lines[i] = k + "=" + v
				}
			}
		}
	}
	for k := range set {
		if !seen[k] {
			return fmt.Errorf("busybox: %s is not in the default configuration", k)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

// lastLines returns s's last n lines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
