// Package selection is what a suite run will run and what it needs of the
// engine's images: a suite binary run with -e2e.selection writes it (see
// framework/suite), and `make images` reads it to build only what the
// selected specs need. One function of framework/suite computes both this
// list and the images its setup checks for, so the two cannot disagree.
//
// It imports nothing but the standard library, so that the image factory
// can read it without linking the suite.
package selection

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Selection is the selected specs of one suite run and the images they
// need.
type Selection struct {
	// Specs are the selected specs' full texts, in run order.
	Specs []string `json:"specs"`
	// Unknown are the selected specs whose needs the suite does not know
	// (no Requirement carries any of their labels): what they need cannot
	// be told, so everything must be provided.
	Unknown []string `json:"unknown,omitempty"`
	// Images are the images the run needs in the engine, sorted by
	// reference.
	Images []Image `json:"images"`
}

// Image is an image a run needs and who needs it.
type Image struct {
	// Ref is the image's reference, e.g. "kindest/node:v1.37.2".
	Ref string `json:"ref"`
	// NeededBy names who needs it: the specs (by their spec name, e.g.
	// "k8s-upgrade") and SuiteSetup.
	NeededBy []string `json:"neededBy"`
}

// SuiteSetup is the NeededBy of what the suite's setup needs whatever
// specs run: the management cluster's node image and controllers.
const SuiteSetup = "suite-setup"

// Complete reports whether the needs of every selected spec are known.
func (s Selection) Complete() bool { return len(s.Unknown) == 0 }

// Refs returns the references of s.Images.
func (s Selection) Refs() []string {
	out := make([]string, 0, len(s.Images))
	for _, img := range s.Images {
		out = append(out, img.Ref)
	}
	return out
}

// NeededBy returns who needs ref, or nil when the run does not need it.
func (s Selection) NeededBy(ref string) []string {
	if i := slices.IndexFunc(s.Images, func(img Image) bool { return img.Ref == ref }); i >= 0 {
		return s.Images[i].NeededBy
	}
	return nil
}

// Write writes s to path as JSON.
func Write(path string, s Selection) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("write selection %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write selection: %w", err)
	}
	return nil
}

// Read reads what Write wrote.
func Read(path string) (Selection, error) {
	var s Selection
	data, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read selection: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("read selection %s: %w", path, err)
	}
	for i, img := range s.Images {
		if img.Ref == "" {
			return s, fmt.Errorf("read selection %s: images[%d]: no ref", path, i)
		}
	}
	if len(s.Specs) == 0 && len(s.Unknown) == 0 {
		return s, errors.New("read selection " + path + ": no spec is selected")
	}
	return s, nil
}

// Filter is Ginkgo's spec selection, as GINKGO_LABEL_FILTER, GINKGO_FOCUS
// and GINKGO_SKIP give it: what `capd-e2e run` passes to Ginkgo's CLI and
// `capd-e2e images` to the compiled suite it asks for its selection.
type Filter struct {
	LabelFilter string
	Focus       string
	Skip        []string
}

// Args returns Ginkgo's flags for f, each name after prefix: "--" for
// Ginkgo's CLI (--label-filter=...), "-ginkgo." for a compiled suite
// (-ginkgo.label-filter=...). Empty settings give no flag.
func (f Filter) Args(prefix string) []string {
	var args []string
	if f.LabelFilter != "" {
		args = append(args, prefix+"label-filter="+f.LabelFilter)
	}
	if f.Focus != "" {
		args = append(args, prefix+"focus="+f.Focus)
	}
	for _, s := range f.Skip {
		args = append(args, prefix+"skip="+s)
	}
	return args
}
