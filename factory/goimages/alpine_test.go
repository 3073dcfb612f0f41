package goimages

import (
	"crypto/sha512"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMinirootfsEntry(t *testing.T) {
	sums := "aa  armv7/alpine-minirootfs-3.24.1-armv7.tar.gz\n" +
		"bb  x86_64/alpine-minirootfs-3.24.1-x86_64.tar.gz\n" +
		"cc  x86/alpine-minirootfs-3.24.1-x86.tar.gz\n" +
		"dd  x86_64/alpine-rootfs-other-x86_64.tar.gz\n"
	name, sum, err := minirootfsEntry([]byte(sums), "x86_64")
	if err != nil || name != "x86_64/alpine-minirootfs-3.24.1-x86_64.tar.gz" || sum != "bb" {
		t.Errorf("x86_64 = %q %q %v", name, sum, err)
	}
	// x86 is not a prefix match of x86_64's line, nor the other way.
	if name, sum, err := minirootfsEntry([]byte(sums), "x86"); err != nil || sum != "cc" {
		t.Errorf("x86 = %q %q %v", name, sum, err)
	}
	if _, _, err := minirootfsEntry([]byte(sums), "s390x"); err == nil || !strings.Contains(err.Error(), "lists no s390x/alpine-minirootfs-*-s390x.tar.gz") {
		t.Errorf("s390x: %v", err)
	}
	two := sums + "ee  x86_64/alpine-minirootfs-3.24.2-x86_64.tar.gz\n"
	if _, _, err := minirootfsEntry([]byte(two), "x86_64"); err == nil || !strings.Contains(err.Error(), "lists 2 minirootfs archives for x86_64") {
		t.Errorf("two for x86_64: %v", err)
	}
}

func TestCheckSHA512(t *testing.T) {
	file := filepath.Join(t.TempDir(), "alpine-minirootfs-3.24.1-x86_64.tar.gz")
	if err := os.WriteFile(file, []byte("rootfs"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512([]byte("rootfs"))
	if err := checkSHA512(file, strings.ToUpper(hex.EncodeToString(sum[:]))); err != nil {
		t.Errorf("matching sum: %v", err)
	}
	if err := checkSHA512(file, strings.Repeat("0", 128)); err == nil || !strings.Contains(err.Error(), "checksums.sha512 says 000") {
		t.Errorf("wrong sum: %v", err)
	}
}

func TestAppendLines(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"root:x:0:\n", "root:x:0:\na\nb\n"},
		{"root:x:0:", "root:x:0:\na\nb\n"},
		{"", "a\nb\n"},
	} {
		in := []byte(tt.in)
		if got := string(appendLines(in, "a", "b")); got != tt.want {
			t.Errorf("appendLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if string(in) != tt.in {
			t.Errorf("appendLines changed its input to %q", in)
		}
	}
}
