package gobuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// writeTree writes a small module with two binaries, one of which uses a
// library package.
func writeTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":          "module example.com/tree\n\ngo 1.26\n",
		"lib/lib.go":      "package lib\n\nfunc X() string { return \"x\" }\n",
		"lib/lib_test.go": "package lib\n",
		"a/main.go":       "package main\n\nimport \"example.com/tree/lib\"\n\nfunc main() { println(lib.X()) }\n",
		"b/main.go":       "package main\n\nfunc main() {}\n",
		"docs/README.md":  "docs\n",
	}
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	return dir
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSourceHashesFollowWhatEachBinaryIsBuiltFrom(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the go command is needed: ", err)
	}
	dir := writeTree(t)
	b := &Builder{CacheDir: t.TempDir()}
	tgt := LocalTarget{Dir: dir, Packages: []string{"./a", "./b"}}
	hash := func() (a, bb string) {
		t.Helper()
		h, err := b.SourceHashes(context.Background(), tgt)
		if err != nil {
			t.Fatal(err)
		}
		if h["./a"].ImportPath != "example.com/tree/a" || h["./a"].Packages != 2 || h["./b"].Packages != 1 {
			t.Fatalf("SourceHashes = %+v", h)
		}
		return h["./a"].Hash, h["./b"].Hash
	}
	a0, b0 := hash()
	if a0 == b0 {
		t.Fatal("two binaries with different sources have one hash")
	}

	// Docs and tests are not built into anything.
	write(t, filepath.Join(dir, "docs", "README.md"), "other docs\n")
	write(t, filepath.Join(dir, "lib", "lib_test.go"), "package lib\n\n// changed\n")
	if a, bb := hash(); a != a0 || bb != b0 {
		t.Error("a change to docs or tests changed a hash")
	}
	// One line of the library: only the binary that uses it.
	write(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nfunc X() string { return \"y\" }\n")
	a1, b1 := hash()
	if a1 == a0 || b1 != b0 {
		t.Errorf("changing lib: a %t, b %t; want only a changed", a1 != a0, b1 != b0)
	}
	// go.mod pins everything else: it counts for both.
	write(t, filepath.Join(dir, "go.mod"), "module example.com/tree\n\ngo 1.26.0\n")
	if a, bb := hash(); a == a1 || bb == b1 {
		t.Error("a change to go.mod did not change both hashes")
	}

	if _, err := b.SourceHashes(context.Background(), LocalTarget{Dir: dir, Packages: []string{"./lib"}}); err == nil {
		t.Error("a library was accepted as a main package")
	}
}

func TestBuildLocalReusesBinariesOfAnUnchangedTree(t *testing.T) {
	dir := writeTree(t)
	b := &Builder{CacheDir: t.TempDir()}
	tgt := LocalTarget{Dir: dir, Packages: []string{"./a"}, LDFlags: LDFlagsX(Setting{"main", "unused", "x"})}
	src, err := b.SourceHashes(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.BuildLocal(context.Background(), tgt, src)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached {
		t.Error("first build reported cached")
	}
	out, err := exec.Command(res.Path("a")).CombinedOutput()
	if err != nil || string(out) != "x\n" {
		t.Errorf("built binary printed %q, %v", out, err)
	}
	again, err := b.BuildLocal(context.Background(), tgt, src)
	if err != nil || !again.Cached || again.Path("a") != res.Path("a") {
		t.Errorf("second build: %+v, %v; want the cached binary", again, err)
	}
	if _, err := b.BuildLocal(context.Background(), LocalTarget{Dir: dir, Packages: []string{"./b"}}, src); err == nil {
		t.Error("a package without a source hash was built")
	}
}
