package selection

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "selection.json")
	want := Selection{
		Specs:  []string{"When upgrading k8s-upgrade", "When following the quick-start quick-start"},
		Images: []Image{{Ref: "kindest/node:v1.36.3", NeededBy: []string{"k8s-upgrade"}}, {Ref: "kindest/node:v1.37.2", NeededBy: []string{SuiteSetup, "quick-start"}}},
	}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Specs, want.Specs) || !slices.Equal(got.Refs(), want.Refs()) || !got.Complete() {
		t.Errorf("read %+v, want %+v", got, want)
	}
	if who := got.NeededBy("kindest/node:v1.37.2"); !slices.Equal(who, []string{SuiteSetup, "quick-start"}) {
		t.Errorf("NeededBy = %q", who)
	}
	if who := got.NeededBy("kindest/node:v1.35.0"); who != nil {
		t.Errorf("NeededBy of an image not needed = %q", who)
	}
}

func TestReadRejects(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ content, want string }{
		"not JSON":     {"specs: [a]", "invalid character"},
		"no spec":      {`{"specs": [], "images": []}`, "no spec is selected"},
		"image no ref": {`{"specs": ["a"], "images": [{"neededBy": ["a"]}]}`, "images[0]: no ref"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Read error %v, want one naming %s and saying %q", name, err, path, tc.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("Read of a missing file: no error")
	}
}

func TestUnknownIsIncomplete(t *testing.T) {
	s := Selection{Specs: []string{"a", "b"}, Unknown: []string{"b"}}
	if s.Complete() {
		t.Error("a selection with an unknown spec is complete")
	}
}

func TestFilterArgs(t *testing.T) {
	f := Filter{LabelFilter: "PR-Blocking && !slow", Focus: "quick", Skip: []string{"a b", "c"}}
	if got, want := strings.Join(f.Args("--"), "|"), "--label-filter=PR-Blocking && !slow|--focus=quick|--skip=a b|--skip=c"; got != want {
		t.Errorf("CLI flags %q, want %q", got, want)
	}
	if got, want := strings.Join(f.Args("-ginkgo."), "|"), "-ginkgo.label-filter=PR-Blocking && !slow|-ginkgo.focus=quick|-ginkgo.skip=a b|-ginkgo.skip=c"; got != want {
		t.Errorf("suite flags %q, want %q", got, want)
	}
	if got := (Filter{}).Args("--"); len(got) != 0 {
		t.Errorf("no selection: %q", got)
	}
}
