package goimages

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"golang.org/x/mod/module"
)

// Alpine Linux's minirootfs, the base of the kitten and nautilus test
// images (upstream's are agnhost's Alpine image plus their files). The
// Go module proxy serves Alpine's docker-alpine repository, which holds
// the minirootfs of a release for every architecture and their SHA-512
// sums; Alpine's package mirrors are not reachable here, so nothing is
// added to it with apk.

// alpineArch maps a GOARCH to the directory and file-name suffix Alpine
// uses for it.
var alpineArch = map[string]string{
	"amd64": "x86_64", "arm64": "aarch64", "arm": "armv7", "386": "x86",
	"ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64",
}

// alpineMinirootfs downloads mod ("module@version") and returns the path
// of the minirootfs for goarch in it ("" for the host's), after checking
// it against the module's checksums.sha512. The go command has already
// checked the module against the checksum database; this check ties the
// archive to the list Alpine's release tooling wrote, and catches a
// module laid out otherwise.
func (b *Builders) alpineMinirootfs(ctx context.Context, mod, goarch string) (string, error) {
	p, v, ok := strings.Cut(mod, "@")
	if !ok || p == "" || v == "" {
		return "", fmt.Errorf("alpine minirootfs: %q is not module@version", mod)
	}
	if goarch == "" {
		goarch = goruntime.GOARCH
	}
	arch, ok := alpineArch[goarch]
	if !ok {
		return "", fmt.Errorf("alpine minirootfs: Alpine builds no minirootfs for GOARCH %q", goarch)
	}
	info, err := b.Go.Download(ctx, module.Version{Path: p, Version: v})
	if err != nil {
		return "", fmt.Errorf("alpine minirootfs: %w", err)
	}
	sums, err := os.ReadFile(filepath.Join(info.Dir, "checksums.sha512"))
	if err != nil {
		return "", fmt.Errorf("alpine minirootfs: %s has no checksum list: %w", mod, err)
	}
	name, sum, err := minirootfsEntry(sums, arch)
	if err != nil {
		return "", fmt.Errorf("alpine minirootfs: %s: %w", mod, err)
	}
	file := filepath.Join(info.Dir, filepath.FromSlash(name))
	if err := checkSHA512(file, sum); err != nil {
		return "", fmt.Errorf("alpine minirootfs: %s: %w", mod, err)
	}
	return file, nil
}

// minirootfsEntry finds the one "<sum>  <arch>/alpine-minirootfs-*-<arch>.tar.gz"
// line of a checksums.sha512.
func minirootfsEntry(sums []byte, arch string) (name, sum string, err error) {
	var found []string
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		n := strings.TrimPrefix(f[1], "*")
		if path.Dir(n) == arch && strings.HasPrefix(path.Base(n), "alpine-minirootfs-") && strings.HasSuffix(n, "-"+arch+".tar.gz") {
			found = append(found, n)
			name, sum = n, f[0]
		}
	}
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("checksums.sha512 lists no %s/alpine-minirootfs-*-%s.tar.gz", arch, arch)
	case 1:
		return name, sum, nil
	}
	return "", "", fmt.Errorf("checksums.sha512 lists %d minirootfs archives for %s: %s", len(found), arch, strings.Join(found, ", "))
}

func checkSHA512(file, want string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(want) {
		return fmt.Errorf("%s: SHA-512 %s, checksums.sha512 says %s", filepath.Base(file), got, want)
	}
	return nil
}
