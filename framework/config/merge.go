package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// merge returns base with overlay merged over it (see Load). Both have
// absolute paths already.
func merge(base, overlay *Config) (*Config, error) {
	out := &Config{
		ManagementClusterName: base.ManagementClusterName,
		Variables:             maps.Clone(base.Variables),
		IntervalsByKey:        maps.Clone(base.IntervalsByKey),
		path:                  overlay.path,
	}
	if overlay.ManagementClusterName != "" {
		out.ManagementClusterName = overlay.ManagementClusterName
	}

	out.Images = slices.Clone(base.Images)
	for _, img := range overlay.Images {
		if i := slices.IndexFunc(out.Images, func(o Image) bool { return o.Name == img.Name }); i >= 0 {
			out.Images[i] = img
			continue
		}
		out.Images = append(out.Images, img)
	}

	for _, p := range base.Providers {
		if !slices.ContainsFunc(overlay.Providers, func(o Provider) bool { return o.Type == p.Type && o.Name == p.Name }) {
			out.Providers = append(out.Providers, p)
		}
	}
	out.Providers = append(out.Providers, overlay.Providers...)

	if out.Variables == nil {
		out.Variables = map[string]string{}
	}
	maps.Copy(out.Variables, overlay.Variables)
	if out.IntervalsByKey == nil {
		out.IntervalsByKey = map[string][]string{}
	}
	maps.Copy(out.IntervalsByKey, overlay.IntervalsByKey)

	b, err := mergeBuild(base.Build, overlay.rawBuild)
	if err != nil {
		return nil, err
	}
	out.Build = b
	return out, nil
}

// mergeBuild merges the build section the overlay file wrote (its YAML, so
// that fields it left out do not blank the base's) over base's.
func mergeBuild(base Build, overlay map[string]any) (Build, error) {
	if len(overlay) == 0 {
		return base, nil
	}
	data, err := json.Marshal(base)
	if err != nil {
		return Build{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return Build{}, err
	}
	mergeMaps(m, overlay, "build")
	data, err = json.Marshal(m)
	if err != nil {
		return Build{}, err
	}
	var out Build
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		return Build{}, fmt.Errorf("build: %w", err)
	}
	return out, nil
}

// mergeMaps merges src into dst: maps key by key, build.goImages by image,
// anything else replaced.
func mergeMaps(dst, src map[string]any, path string) {
	for k, v := range src {
		p := path + "." + k
		switch sv := v.(type) {
		case map[string]any:
			if dv, ok := dst[k].(map[string]any); ok {
				mergeMaps(dv, sv, p)
				continue
			}
		case []any:
			if p == "build.goImages" {
				dst[k] = mergeListBy(asList(dst[k]), sv, "image")
				continue
			}
		}
		dst[k] = v
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// mergeListBy merges src into dst, replacing the items whose key field
// equals that of an item of src.
func mergeListBy(dst, src []any, key string) []any {
	out := slices.Clone(dst)
	for _, s := range src {
		sm, _ := s.(map[string]any)
		i := slices.IndexFunc(out, func(d any) bool {
			dm, _ := d.(map[string]any)
			return sm != nil && dm != nil && dm[key] == sm[key]
		})
		if i >= 0 {
			out[i] = s
		} else {
			out = append(out, s)
		}
	}
	return out
}

// absRawBuild makes the paths of a file's raw build section absolute, as
// absPaths does for the typed fields.
func absRawBuild(raw map[string]any, dir string) {
	abs := func(m map[string]any, key string) {
		if s, ok := m[key].(string); ok && s != "" && !filepath.IsAbs(s) && !strings.Contains(s, "://") {
			m[key] = filepath.Join(dir, s)
		}
	}
	if capi, ok := raw["clusterAPI"].(map[string]any); ok {
		abs(capi, "source")
	}
	for _, item := range asList(raw["goImages"]) {
		if m, ok := item.(map[string]any); ok {
			abs(m, "dir")
		}
	}
}
