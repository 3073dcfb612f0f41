package secrets

import "slices"

// Rendering a line: the findings of its spans, and the line as written
// out with them redacted.

// renderResult is a rendering of one line.
type renderResult struct {
	changed bool
	out     []byte // the new line, when changed and asked for
	finds   []*Finding
	spans   []span // merged, one per finding (empty for a repl)
}

// keep returns what to hold back of r.
func (r renderResult) keep(line, eol []byte, drop bool) rendered {
	if drop {
		return rendered{finds: r.finds}
	}
	if r.changed {
		return rendered{out: r.out, finds: r.finds}
	}
	out := make([]byte, 0, len(line)+len(eol))
	return rendered{out: append(append(out, line...), eol...), finds: r.finds}
}

// render applies lo to line. Findings are made here, one per merged span.
func render(line, eol []byte, n int, lo *lineOut, wantOut bool) renderResult {
	var r renderResult
	switch {
	case lo.drop:
		r.changed = true
		return r
	case lo.repl:
		ind := indent(line)
		content := line[ind:trimRight(line, len(line))]
		if isPlaceholder(content) {
			return r
		}
		r.changed = true
		r.finds = []*Finding{{Line: n, Kind: lo.kind, Fingerprint: fingerprintOf(content)}}
		r.spans = []span{{ind, len(line), lo.kind, Marker}}
		if wantOut {
			r.out = append(append(append([]byte(nil), line[:ind]...), Marker...), eol...)
		}
		return r
	case len(lo.spans) == 0:
		return r
	}
	spans := merge(lo.spans)
	r.changed = true
	r.spans = spans
	r.finds = make([]*Finding, len(spans))
	for i, s := range spans {
		r.finds[i] = &Finding{Line: n, Kind: s.kind, Fingerprint: fingerprintOf(line[s.start:s.end])}
	}
	if wantOut {
		out := make([]byte, 0, len(line)+len(eol))
		last := 0
		for _, s := range spans {
			out = append(out, line[last:s.start]...)
			out = append(out, s.repl...)
			last = s.end
		}
		out = append(out, line[last:]...)
		r.out = append(out, eol...)
	}
	return r
}

// merge sorts spans and joins those that overlap; the joined span takes the
// kind (and replacement) that ranks first.
func merge(spans []span) []span {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(x, y span) int { return x.start - y.start })
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start >= last.end {
			out = append(out, s)
			continue
		}
		if rank(s.kind) < rank(last.kind) {
			last.kind, last.repl = s.kind, s.repl
		}
		last.end = max(last.end, s.end)
	}
	return out
}

// findingAt returns the finding of r whose span holds pos.
func findingAt(r renderResult, pos int) (*Finding, span) {
	for i, s := range r.spans {
		if s.start <= pos && pos < s.end && i < len(r.finds) {
			return r.finds[i], s
		}
	}
	return nil, span{}
}

func fpOf(r renderResult, line []byte) []*fpFinding {
	if len(r.finds) == 0 {
		return nil
	}
	f := r.finds[0]
	return []*fpFinding{{f, newFingerprint(trimSpace(line))}}
}
