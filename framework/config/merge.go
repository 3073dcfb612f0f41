package config

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
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

	out.rawBuild = deepCopy(base.rawBuild)
	if out.rawBuild == nil {
		out.rawBuild = map[string]any{}
	}
	mergeMaps(out.rawBuild, deepCopy(overlay.rawBuild), "build")
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

// deepCopy copies a document read by yaml.Unmarshal (maps, lists and
// scalars).
func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopy(t)
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyValue(e)
		}
		return l
	}
	return v
}

// splitKey splits a key path of FactoryKeys into its segments.
func splitKey(path string) []string { return strings.Split(path, ".") }

// stripKeys deletes from m (in place) the keys at paths and returns m.
func stripKeys(m map[string]any, paths []string) map[string]any {
	for _, p := range paths {
		strip(m, splitKey(p))
	}
	return m
}

func strip(m map[string]any, segs []string) {
	key, list := strings.CutSuffix(segs[0], "[]")
	if len(segs) == 1 {
		delete(m, key)
		return
	}
	var subs []any
	if list {
		subs = asList(m[key])
	} else {
		subs = []any{m[key]}
	}
	for _, s := range subs {
		if sm, ok := s.(map[string]any); ok {
			strip(sm, segs[1:])
		}
	}
}

// projectKeys returns a copy of m holding only the keys at paths; a list
// on a path keeps each of its entries, in place, as the projection of that
// entry.
func projectKeys(m map[string]any, paths []string) map[string]any {
	segs := make([][]string, len(paths))
	for i, p := range paths {
		segs[i] = splitKey(p)
	}
	return project(m, segs)
}

func project(m map[string]any, paths [][]string) map[string]any {
	out := map[string]any{}
	rest := map[string][][]string{}
	for _, p := range paths {
		key := strings.TrimSuffix(p[0], "[]")
		v, ok := m[key]
		if !ok {
			continue
		}
		if len(p) == 1 {
			out[key] = copyValue(v)
			continue
		}
		rest[p[0]] = append(rest[p[0]], p[1:])
	}
	for seg, sub := range rest {
		key, list := strings.CutSuffix(seg, "[]")
		if _, whole := out[key]; whole {
			continue
		}
		if !list {
			if vm, ok := m[key].(map[string]any); ok {
				out[key] = project(vm, sub)
			}
			continue
		}
		entries := asList(m[key])
		l := make([]any, len(entries))
		for i, e := range entries {
			em, _ := e.(map[string]any)
			l[i] = project(em, sub)
		}
		out[key] = l
	}
	return out
}
