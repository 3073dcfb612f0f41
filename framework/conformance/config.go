package conformance

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"sigs.k8s.io/yaml"
)

// ReadConfig reads a configuration file in upstream's
// KUBETEST_CONFIGURATION format: a flat YAML map of e2e.test flags to
// their values. Values read as upstream reads them, into strings: a
// number or a boolean becomes its text (3 is "3"), a null "". A nested
// value is an error naming its key.
func ReadConfig(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance configuration: %w", err)
	}
	// Untyped first, to name a nested value's key: decoding it into a
	// string fails without saying which.
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("conformance configuration %s: %w", path, err)
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		switch raw[k].(type) {
		case map[string]any:
			return nil, fmt.Errorf("conformance configuration %s: %s: a flag's value must be a string, not a map", path, k)
		case []any:
			return nil, fmt.Errorf("conformance configuration %s: %s: a flag's value must be a string, not a list", path, k)
		}
	}
	// Then into strings, as upstream does, so that an integer keeps its
	// digits (10000000, not the 1e+07 its float64 prints).
	out := map[string]string{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("conformance configuration %s: %w", path, err)
	}
	return out, nil
}
