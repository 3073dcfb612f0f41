package secrets

import "bytes"

// The document structure the engine tracks: YAML mappings and sequences
// by indentation, block scalars, document markers.

// startsStructure tells a line that begins a map entry, a list item or a
// flow collection.
func startsStructure(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case '-', '{', '[', '#':
		return b[0] != '-' || len(b) == 1 || isSpace(b[1])
	}
	_, ok := parseKey(b, 0)
	return ok
}

// blockStart asks line to start a valueBlock after the line is routed:
// for a secret key (a: dropped from both renderings), for a data entry (b:
// dropped from b), or both.
type blockStart struct {
	col          int
	mode         blockMode
	a, b         bool
	kindA, kindB Kind
	at           int // where the header's span starts, or -1
}

// structure tracks maps and their kinds and returns the spans of secret
// keys' values, the span of a data entry's value and a multi-line value
// to follow.
func (e *engine) structure(line []byte, ind int, sec *section) (spans []span, data *span, bs *blockStart) {
	if ind == 0 && isDocMarker(line) {
		e.popTo(-1)
		e.sec = nil
		return nil, nil, nil
	}
	e.popTo(ind)
	pos, dashed := ind, false
	for pos < len(line) && line[pos] == '-' && (pos+1 == len(line) || isSpace(line[pos+1])) {
		dashed = true
		pos++
		pos += indent(line[pos:])
	}
	isEntry := false
	if sec != nil {
		if sec.entryCol < 0 {
			sec.entryCol = ind
		}
		isEntry = ind <= sec.entryCol
	}
	k, ok := parseKey(line, pos)
	if !ok {
		return nil, nil, nil
	}
	var f, parent *frame
	if n := len(e.frames); n > 0 && !dashed && e.frames[n-1].col == pos {
		f = e.frames[n-1]
	} else {
		f = &frame{col: pos}
		e.frames = append(e.frames, f)
	}
	if n := len(e.frames); n > 1 {
		parent = e.frames[n-2]
	}
	v := parseValue(line, k.val, k.quote == '"')

	if bytes.Equal(k.name, kindKey) {
		kind := "-"
		if v.kind == vScalar || v.kind == vOther && v.end > v.start {
			kind = string(line[v.start:v.end])
		}
		f.kind = kind
		for _, s := range f.pending {
			if s.state == pending {
				s.state = notSecret
				if kind == "Secret" {
					s.state = isSecret
				}
			}
		}
		f.pending = nil
	}

	kind := keyKind(k.name)
	if kind == KindToken && parent != nil && parent.lastUser {
		kind = KindKubeconfigToken
	}
	f.lastUser = bytes.Equal(k.name, userKey)

	if kind != "" {
		switch v.kind {
		case vScalar:
			spans = append(spans, span{v.start, v.end, valueKind(kind, line[v.start:v.end]), v.repl})
		case vBlock:
			spans = append(spans, span{v.start, v.end, kind, Marker})
			bs = &blockStart{col: pos, mode: dropLines, a: true, kindA: kind, kindB: kind, at: v.start}
		case vNone:
			bs = &blockStart{col: pos, mode: firstLine, a: true, kindA: kind, kindB: kind, at: -1}
		}
	}
	if isEntry {
		switch v.kind {
		case vScalar:
			data = &span{v.start, v.end, KindSecretData, v.repl}
		case vBlock:
			data = &span{v.start, v.end, KindSecretData, Marker}
			if bs == nil {
				bs = &blockStart{col: pos, mode: dropLines, at: v.start}
			}
			bs.b, bs.kindB = true, KindSecretData
		case vNone:
			if bs == nil {
				bs = &blockStart{col: pos, mode: firstLine, at: -1}
			}
			bs.b, bs.kindB = true, KindSecretData
		}
	}
	if sec == nil && (v.kind == vNone || v.open) && (bytes.Equal(k.name, dataKey) || bytes.Equal(k.name, stringDataKey)) {
		s := &section{col: pos, entryCol: -1}
		switch f.kind {
		case "":
			f.pending = append(f.pending, s)
			e.sec = s
		case "Secret":
			s.state = isSecret
			e.sec = s
		}
	}
	return spans, data, bs
}

func isDocMarker(line []byte) bool {
	t := trimSpace(line)
	return bytes.Equal(t, []byte("---")) || bytes.Equal(t, []byte("...")) || bytes.HasPrefix(line, []byte("--- "))
}

// popTo ends the maps whose keys are indented more than ind: an object
// whose kind never showed up is not a Secret.
func (e *engine) popTo(ind int) {
	for n := len(e.frames); n > 0 && e.frames[n-1].col > ind; n-- {
		for _, s := range e.frames[n-1].pending {
			if s.state == pending {
				s.state = notSecret
			}
		}
		e.frames = e.frames[:n-1]
	}
}
