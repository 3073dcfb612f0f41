package goimages

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/module"

	"github.com/capd-e2e/capd-e2e/factory/buildspec"
	"github.com/capd-e2e/capd-e2e/factory/gobuild"
	"github.com/capd-e2e/capd-e2e/factory/oci"
	"github.com/capd-e2e/capd-e2e/factory/plan"
)

// Kubernetes' conformance suite and the e2e test images its tests run
// (plan.KindConformance, plan.KindTestImage), built from a
// k8s.io/kubernetes version and a Debian rootfs as upstream's Dockerfiles
// under test/conformance/image and test/images describe them, where the
// tests depend on it. Where ours differ:
//   - Upstream builds most test images on Alpine; ours are on the Debian
//     rootfs the config names, with the same tools (bash, curl, dig, nc,
//     nginx, getent) on PATH, whose packages Debian's archive serves.
//     kitten and nautilus, which tests only serve files from and mount as
//     image volumes (ImageVolume reads Alpine's os-release), are agnhost on
//     Alpine's minirootfs without those packages (see alpine.go).
//   - agnhost lacks the CoreDNS 1.6.2 binary and the fake registry's
//     content that upstream downloads into it, which no [Conformance]
//     test uses. Its previous version (agnhost:2.55, AgnhostPrev) is the
//     same build tagged so, with its own version label: tests use it to
//     see an image change roll out, not for what it runs.
//   - The conformance image has no go-runner: the runner starts ginkgo
//     itself, as Cluster API's kubetest does.

// testImagePackages are the main packages under k8s.io/kubernetes' (or
// its staging modules') test images, compiled in one go command per
// version: agnhost, nonewprivs' nnp, and the sample API server.
var testImagePackages = []string{"/test/images/agnhost", "/test/images/nonewprivs", "k8s.io/sample-apiserver"}

// kubernetesTarget is the go build of main packages of k8s.io/kubernetes
// at version with its release build's settings, in the wrapper module
// that Kubernetes uses, so that it reuses the packages the component
// images compiled.
func (b *Builders) kubernetesTarget(ctx context.Context, s plan.Step, pkgs []string) (gobuild.Target, string, error) {
	m := module.Version{Path: s.Inputs[plan.InputModule], Version: s.Inputs[plan.InputVersion]}
	info, err := b.Go.Download(ctx, m)
	if err != nil {
		return gobuild.Target{}, "", err
	}
	full := make([]string, len(pkgs))
	for i, p := range pkgs {
		if strings.HasPrefix(p, "/") {
			p = m.Path + p
		}
		full[i] = p
	}
	return gobuild.Target{
		Modules:        []module.Version{m},
		Packages:       full,
		LocalVersion:   gobuild.KubernetesStagingVersion,
		LocalVersionID: "kubernetes-staging",
		Tags:           gobuild.KubernetesTags,
		LDFlags:        gobuild.KubernetesLDFlags(gobuild.SourceOf(info)),
		GOARCH:         s.Inputs[plan.InputArch],
	}, info.Dir, nil
}

// buildConformance builds the conformance image: e2e.test (`go test -c`
// of k8s.io/kubernetes/test/e2e), the ginkgo CLI at the version that
// Kubernetes release requires, and the kubectl of the version's node
// image, in /usr/local/bin on the rootfs, as upstream's
// test/conformance/image does.
func (b *Builders) buildConformance(ctx context.Context, s plan.Step) error {
	e2e, _, err := b.kubernetesTarget(ctx, s, []string{"/test/e2e"})
	if err != nil {
		return err
	}
	e2e.Test = true
	ginkgo, _, err := b.kubernetesTarget(ctx, s, []string{"github.com/onsi/ginkgo/v2/ginkgo"})
	if err != nil {
		return err
	}
	// Version settings and build tags do not matter to the ginkgo CLI.
	ginkgo.LDFlags, ginkgo.Tags = nil, nil
	bins, err := b.Kubernetes(ctx, s.Inputs[plan.InputModule], s.Inputs[plan.InputVersion], s.Inputs[plan.InputArch])
	if err != nil {
		return err
	}
	e2eRes, err := b.Go.Build(ctx, e2e)
	if err != nil {
		return err
	}
	ginkgoRes, err := b.Go.Build(ctx, ginkgo)
	if err != nil {
		return err
	}
	return b.image(ctx, s, imageContent{
		base: s.Inputs[plan.InputFrom],
		files: map[string]string{
			"/usr/local/bin/e2e.test": e2eRes.Path("e2e.test"),
			"/usr/local/bin/ginkgo":   ginkgoRes.Path("ginkgo"),
			"/usr/local/bin/kubectl":  bins.Path("kubectl"),
		},
		dirs:   []string{"/output"},
		config: oci.Config{Entrypoint: []string{"/usr/local/bin/ginkgo"}},
	})
}

// buildTestImage builds one e2e test image, after checking that the
// Kubernetes version's test/utils/image/manifest.go names its tag.
func (b *Builders) buildTestImage(ctx context.Context, s plan.Step) error {
	name, tag := s.Inputs[plan.InputName], s.Inputs[plan.InputTag]
	target, dir, err := b.kubernetesTarget(ctx, s, testImagePackages)
	if err != nil {
		return err
	}
	if err := checkManifest(dir, name, tag); err != nil {
		return fmt.Errorf("%w (%s@%s)", err, s.Inputs[plan.InputModule], s.Inputs[plan.InputVersion])
	}
	compiled := func(bin string) (string, error) {
		res, err := b.Go.Build(ctx, target)
		if err != nil {
			return "", err
		}
		return res.Path(bin), nil
	}
	from := s.Inputs[plan.InputFrom]
	var c imageContent
	switch name {
	case buildspec.TestImageAgnhost:
		bin, err := compiled("agnhost")
		if err != nil {
			return err
		}
		etc, err := oci.ReadFiles(ctx, b.Images, from, "/etc/passwd", "/etc/group")
		if err != nil {
			return err
		}
		if c, err = agnhostContent(dir, bin, etc["/etc/passwd"], etc["/etc/group"]); err != nil {
			return err
		}
		c.base = from
	case buildspec.TestImageKitten, buildspec.TestImageNautilus:
		bin, err := compiled("agnhost")
		if err != nil {
			return err
		}
		rootfs, err := b.alpineMinirootfs(ctx, s.Inputs[plan.InputAlpine], s.Inputs[plan.InputArch])
		if err != nil {
			return err
		}
		etc, err := oci.ReadTarGz(rootfs, "etc/passwd", "etc/group")
		if err != nil {
			return err
		}
		if c, err = agnhostContent(dir, bin, etc["etc/passwd"], etc["etc/group"]); err != nil {
			return err
		}
		html, err := sourceFiles(filepath.Join(dir, "test", "images", name, "html"), name+".jpg", "data.json")
		if err != nil {
			return err
		}
		c.under = []oci.Layer{oci.LayerFromTarGz(rootfs)}
		c.extra = append(c.extra, html...)
		c.config.Cmd = []string{"test-webserver"}
	case buildspec.TestImageNonewprivs:
		bin, err := compiled("nonewprivs")
		if err != nil {
			return err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		c = imageContent{
			base: from,
			// Set-user-ID root: the test checks that no_new_privs keeps it
			// from raising the effective user.
			extra:  []oci.File{{Path: "usr/local/bin/nnp", Mode: 0o4755, Data: data}},
			config: oci.Config{Cmd: []string{"nnp"}},
		}
	case buildspec.TestImageSampleAPIServer:
		bin, err := compiled("sample-apiserver")
		if err != nil {
			return err
		}
		c = imageContent{base: from, files: map[string]string{"/sample-apiserver": bin}, config: oci.Config{Entrypoint: []string{"/sample-apiserver"}}}
	case buildspec.TestImageNonRoot:
		c = imageContent{base: from, config: oci.Config{User: "1234"}}
	case buildspec.TestImageGlibcDNSTesting:
		c = imageContent{base: from, config: oci.Config{Cmd: []string{"bash"}}}
	case buildspec.TestImageNginx:
		c = imageContent{base: from, config: oci.Config{Cmd: []string{"nginx", "-g", "daemon off;"}, StopSignal: "SIGQUIT"}}
	case buildspec.TestImageBusyBox:
		return b.buildBusyBox(ctx, s)
	default:
		return fmt.Errorf("e2e test image %q: not one the factory builds (%s)", name, strings.Join(buildspec.TestImageNames, ", "))
	}
	c.config.Labels = map[string]string{"org.opencontainers.image.version": tag, "org.opencontainers.image.title": name}
	return b.image(ctx, s, c)
}

// agnhostContent is what agnhost's Dockerfile adds to its base, less the
// packages (see the Debian rootfs for agnhost, Alpine's busybox for
// kitten and nautilus): the binary at /agnhost (bin) and its agnhost-2
// link, porter's certificate and key from the Kubernetes source in dir,
// /uploads, and the user and groups the tests expect, added to the base's
// passwd and group.
func agnhostContent(dir, bin string, passwd, group []byte) (imageContent, error) {
	porter, err := sourceFiles(filepath.Join(dir, "test", "images", "agnhost", "porter"), "localhost.crt", "localhost.key")
	if err != nil {
		return imageContent{}, err
	}
	return imageContent{
		files: map[string]string{"/agnhost": bin},
		dirs:  []string{"/uploads"},
		extra: append(porter,
			oci.File{Path: "agnhost-2", Link: "agnhost"},
			oci.File{Path: "etc/passwd", Data: appendLines(passwd, "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh")},
			oci.File{Path: "etc/group", Data: appendLines(group, "user-defined-in-image:x:1000:", "group-defined-in-image:x:50000:user-defined-in-image")},
		),
		config: oci.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, WorkingDir: "/"},
	}, nil
}

// appendLines returns a copy of a line-based file with lines added, on
// lines of their own even if the file lacks a final newline.
func appendLines(file []byte, lines ...string) []byte {
	out := bytes.Clone(file)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	for _, l := range lines {
		out = append(append(out, l...), '\n')
	}
	return out
}

// sourceFiles reads the files names of dir (in the module cache: read,
// never linked, so their modes stay as the go command left them) as
// entries at the image's root.
func sourceFiles(dir string, names ...string) ([]oci.File, error) {
	out := make([]oci.File, 0, len(names))
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, oci.File{Path: n, Data: data})
	}
	return out, nil
}

// manifestEntry matches one image of test/utils/image/manifest.go:
// `configs[Agnhost] = Config{list.PromoterE2eRegistry, "agnhost", "2.66.1"}`.
var manifestEntry = regexp.MustCompile(`Config\{list\.\w+, "([^"]+)", "([^"]+)"\}`)

// checkManifest checks that the Kubernetes source in dir names the test
// image name at tag, so that a config listing a tag its tests do not run
// fails here rather than as pods that pull an image no node has.
func checkManifest(dir, name, tag string) error {
	const file = "test/utils/image/manifest.go"
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return fmt.Errorf("e2e test image %s:%s: %w", name, tag, err)
	}
	var tags []string
	for _, m := range manifestEntry.FindAllStringSubmatch(string(data), -1) {
		if m[1] == name {
			tags = append(tags, m[2])
		}
	}
	if slices.Contains(tags, tag) {
		return nil
	}
	if len(tags) == 0 {
		return fmt.Errorf("e2e test image %s:%s: %s names no image %q", name, tag, file, name)
	}
	return fmt.Errorf("e2e test image %s:%s: %s names %s only at %s", name, tag, file, name, strings.Join(tags, ", "))
}
