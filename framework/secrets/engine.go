package secrets

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"sync"
)

const (
	// maxLine is the longest line handled whole; a longer one is handled in
	// pieces cut at a comma or a space near this size, so a value that
	// straddles a cut in a line without either may be missed.
	maxLine = 1 << 20
	// maxPending bounds what is held back while the kind of an object with
	// a data section is unknown. A Kubernetes object is at most about 1.5
	// MiB; past this the section is treated as a Secret's, failing safe.
	maxPending = 4 << 20
	// sniffLen is how much of a file is checked for a NUL byte, as git does.
	sniffLen = 8000
)

// engine reads a stream line by line and writes it back with secrets
// replaced. It tracks just enough YAML and JSON structure to know the
// kind of the object that holds a data section and the key above a map.
//
// A line inside the data section of an object whose kind is not known yet
// has two renderings: a, as if the object were not a Secret, and b, with
// the section's values redacted too. Such lines wait in queue until the
// object's kind shows up or the object ends.
type engine struct {
	w     *bufio.Writer // nil when only scanning
	n     int           // lines read
	found []*Finding

	pem    *pemBlock
	ablk   *valueBlock // a secret key's multi-line value
	bblk   *valueBlock // a data entry's multi-line value
	frames []*frame
	sec    *section // the data section being read, if any

	queue  []queued
	queued int // bytes in queue

	cur      lineState // of the line whose pieces are being read
	flagNext Kind      // a secret flag ended the last line; its value may start this one
}

// lineState carries what the first piece of a long line decided to the
// following pieces.
type lineState struct {
	sec          *section
	dropA, dropB bool
}

// frame is a map being read: its keys start at col.
type frame struct {
	col      int
	kind     string // its kind key's value; "" until seen
	lastUser bool   // its latest key is "user"
	pending  []*section
}

type sectionState int

const (
	pending sectionState = iota
	isSecret
	notSecret
)

// section is the data or stringData map of an object.
type section struct {
	col      int // of its key
	entryCol int // of its entries; -1 until the first one
	state    sectionState
}

// blockMode says how a multi-line value's lines are handled.
type blockMode int

const (
	// dropLines drops the lines of a block scalar (or of a value that
	// started on the line after its key).
	dropLines blockMode = iota
	// firstLine replaces the first line after a key with no value by
	// Marker, unless that line shows the value is a map or a list.
	firstLine
)

// valueBlock is a secret value spread over the lines indented more than
// col that follow its key.
type valueBlock struct {
	col          int
	mode         blockMode
	kindA, kindB Kind // of the finding for a firstLine
	fps          []*fpFinding
}

// fpFinding is a finding whose fingerprint grows with the lines of its
// value.
type fpFinding struct {
	f  *Finding
	fp *fingerprint
}

func (b *valueBlock) add(line []byte) {
	for _, x := range b.fps {
		x.fp.add(line)
	}
}

func (b *valueBlock) end() {
	for _, x := range b.fps {
		x.f.Fingerprint = x.fp.String()
	}
}

// pemBlock is a PEM private key whose body is on the lines after its BEGIN
// line.
type pemBlock struct {
	prefix      []byte // what stands before -----BEGIN on its line
	blankPrefix bool
	afterHeader bool
	f           fpFinding
}

// lineOut says how one rendering treats a line.
type lineOut struct {
	drop  bool
	repl  bool // replace what follows the indentation by Marker
	kind  Kind // of repl's finding
	spans []span
}

// queued is a line held back, in both renderings.
type queued struct {
	sec  *section
	a, b rendered
}

type rendered struct {
	out   []byte // nil: dropped
	finds []*Finding
}

func newEngine(w io.Writer) *engine {
	e := &engine{}
	if w != nil {
		e.w = bufio.NewWriterSize(w, 64<<10)
	}
	return e
}

// readers are reused: a tree holds thousands of files, and a new 64 KiB
// buffer for each would cost more to clear than to read most of them.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// run reads r to its end. It returns binary true, having copied r as it is,
// when r looks binary.
func (e *engine) run(r io.Reader) (binary bool, err error) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	head, _ := br.Peek(sniffLen)
	if bytes.IndexByte(head, 0) >= 0 {
		if e.w != nil {
			if _, err := br.WriteTo(e.w); err != nil {
				return true, err
			}
			return true, e.w.Flush()
		}
		return true, nil
	}
	start := true
	var long []byte
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, b...)
			if len(long) >= maxLine {
				cut := cutPoint(long)
				e.piece(long[:cut], nil, start, false)
				start = false
				long = append(long[:0], long[cut:]...)
			}
			continue
		}
		if len(long) > 0 {
			long = append(long, b...)
			b = long
		}
		if len(b) > 0 {
			line, eol := splitEOL(b)
			e.piece(line, eol, start, true)
		}
		long, start = long[:0], true
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
	}
	e.close()
	if e.w != nil {
		return false, e.w.Flush()
	}
	return false, nil
}

// cutPoint is where to cut a long line: after its last comma, else its last
// space, else at its end.
func cutPoint(b []byte) int {
	if i := bytes.LastIndexByte(b, ','); i > len(b)/2 {
		return i + 1
	}
	if i := bytes.LastIndexByte(b, ' '); i > len(b)/2 {
		return i + 1
	}
	return len(b)
}

func splitEOL(b []byte) (line, eol []byte) {
	n := len(b)
	if n > 0 && b[n-1] == '\n' {
		n--
	}
	if n > 0 && b[n-1] == '\r' {
		n--
	}
	return b[:n], b[n:]
}

func (e *engine) piece(line, eol []byte, start, final bool) {
	if start {
		e.n++
		e.line(line, eol, final)
		return
	}
	st := e.cur
	e.flagNext = ""
	a, b := lineOut{drop: st.dropA}, lineOut{drop: st.dropB}
	if !st.dropA {
		spans, _, _ := inline(line, nil)
		a.spans = spans
		if !st.dropB {
			b.spans = spans
		}
	}
	e.route(line, eol, st.sec, &a, &b)
}

// line handles a line, or the first piece of a long one (final false).
func (e *engine) line(line, eol []byte, final bool) {
	flag := e.flagNext
	e.flagNext = ""
	ind := indent(line)
	blank := len(trimSpace(line)) == 0

	// A PEM block's body is dropped from both renderings and changes no
	// other state, so that redacting twice gives what redacting once does.
	if p := e.pem; p != nil {
		st, rest := p.next(line)
		switch st {
		case pemBody:
			e.dropLine(line, eol)
			return
		case pemEndLine:
			e.endPEM()
			if rest == nil {
				e.dropLine(line, eol)
				return
			}
			line = rest
			ind = indent(line)
			blank = false
		default:
			e.endPEM()
		}
	}

	// The data section this line is in.
	var sec *section
	if e.sec != nil {
		if blank || ind > e.sec.col {
			sec = e.sec
		} else {
			e.sec = nil
		}
	}

	// The multi-line value of a data entry: dropped from b only.
	var a, b lineOut
	bDone := false
	if k := e.bblk; k != nil && !blank {
		switch {
		case ind <= k.col:
			e.endBlock(&e.bblk)
		case k.mode == firstLine && (startsStructure(line[ind:]) || isPlaceholder(trimSpace(line))):
			e.bblk = nil
		case k.mode == firstLine:
			k.mode = dropLines
			b, bDone = lineOut{repl: true, kind: k.kindB}, true
		default:
			k.add(trimSpace(line))
			b, bDone = lineOut{drop: true}, true
		}
	}
	// The multi-line value of a secret key: dropped from both.
	if k := e.ablk; k != nil && !blank {
		switch {
		case ind <= k.col:
			e.endBlock(&e.ablk)
		case k.mode == firstLine && (startsStructure(line[ind:]) || isPlaceholder(trimSpace(line))):
			e.ablk = nil
		case k.mode == firstLine:
			k.mode = dropLines
			a = lineOut{repl: true, kind: k.kindA}
			if !bDone {
				b = lineOut{repl: true, kind: k.kindB}
			}
			e.cur = lineState{sec: sec, dropA: true, dropB: true}
			ra, rb := e.route(line, eol, sec, &a, &b)
			k.fps = append(k.fps, fpOf(ra, line)...)
			switch {
			case !bDone:
				k.fps = append(k.fps, fpOf(rb, line)...)
			case b.repl && e.bblk != nil:
				e.bblk.fps = append(e.bblk.fps, fpOf(rb, line)...)
			}
			return
		default:
			k.add(trimSpace(line))
			e.dropLine(line, eol)
			return
		}
	}

	var data *span
	var bs *blockStart
	if !blank && line[ind] != '#' {
		a.spans, data, bs = e.structure(line, ind, sec)
	}
	if flag != "" {
		a.spans = flagValue(line, flag, a.spans)
	}
	var open int
	a.spans, open, e.flagNext = inline(line, a.spans)
	if !final {
		e.flagNext = ""
	}
	if !bDone {
		b.spans = a.spans
		if data != nil {
			b.spans = append(slices.Clip(a.spans), *data)
		}
	}
	e.cur = lineState{sec: sec, dropB: b.drop || b.repl}
	ra, rb := e.route(line, eol, sec, &a, &b)
	if bDone && b.repl && e.bblk != nil {
		e.bblk.fps = append(e.bblk.fps, fpOf(rb, line)...)
	}

	if open >= 0 && final {
		p := &pemBlock{prefix: bytes.Clone(line[:open])}
		p.blankPrefix = len(trimSpace(p.prefix)) == 0
		for _, r := range [2]renderResult{ra, rb} {
			if f, s := findingAt(r, open); f != nil && p.f.f == nil {
				p.f = fpFinding{f, newFingerprint(line[s.start:s.end])}
			}
		}
		e.pem = p
	}
	if bs != nil {
		k := &valueBlock{col: bs.col, mode: bs.mode, kindA: bs.kindA, kindB: bs.kindB}
		if bs.at >= 0 {
			for _, r := range [2]renderResult{ra, rb} {
				if f, s := findingAt(r, bs.at); f != nil {
					k.fps = append(k.fps, &fpFinding{f, newFingerprint(line[s.start:s.end])})
				}
			}
		}
		if bs.a {
			e.ablk = k
		}
		if bs.b {
			kb := *k
			if bs.a {
				kb.fps = nil
			}
			e.bblk = &kb
		}
	}
}

func (e *engine) dropLine(line, eol []byte) {
	e.cur = lineState{dropA: true, dropB: true}
	drop := lineOut{drop: true}
	e.route(line, eol, nil, &drop, &drop)
}

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

func (e *engine) endBlock(k **valueBlock) {
	if *k != nil {
		(*k).end()
		*k = nil
	}
}

func (e *engine) endPEM() {
	if p := e.pem; p != nil {
		if p.f.f != nil {
			p.f.f.Fingerprint = p.f.fp.String()
		}
		e.pem = nil
	}
}

func (e *engine) close() {
	e.endPEM()
	e.endBlock(&e.ablk)
	e.endBlock(&e.bblk)
	e.popTo(-1)
	e.sec = nil
	e.flush()
}

// route renders a line as the state of its section says and writes it, or
// holds it back. It returns both renderings' findings (nil when not
// rendered).
func (e *engine) route(line, eol []byte, sec *section, a, b *lineOut) (ra, rb renderResult) {
	if sec == nil || sec.state != pending {
		lo := a
		if sec != nil && sec.state == isSecret {
			lo = b
		}
		r := render(line, eol, e.n, lo, e.w != nil || len(e.queue) > 0)
		if len(e.queue) == 0 {
			if e.w != nil && !lo.drop {
				if r.changed {
					e.w.Write(r.out)
				} else {
					e.w.Write(line)
					e.w.Write(eol)
				}
			}
			e.found = append(e.found, r.finds...)
		} else {
			e.enqueue(queued{a: r.keep(line, eol, lo.drop)})
		}
		if lo == a {
			return r, renderResult{}
		}
		return renderResult{}, r
	}
	ra = render(line, eol, e.n, a, true)
	rb = render(line, eol, e.n, b, true)
	e.enqueue(queued{sec: sec, a: ra.keep(line, eol, a.drop), b: rb.keep(line, eol, b.drop)})
	return ra, rb
}

func (e *engine) enqueue(q queued) {
	e.queue = append(e.queue, q)
	e.queued += len(q.a.out) + len(q.b.out)
	if e.queued > maxPending {
		for _, q := range e.queue {
			if q.sec != nil && q.sec.state == pending {
				q.sec.state = isSecret
			}
		}
	}
	e.flush()
}

// flush writes the held lines whose section is decided, in order.
func (e *engine) flush() {
	i := 0
	for ; i < len(e.queue); i++ {
		q := e.queue[i]
		if q.sec != nil && q.sec.state == pending {
			break
		}
		r := q.a
		if q.sec != nil && q.sec.state == isSecret {
			r = q.b
		}
		if e.w != nil && r.out != nil {
			e.w.Write(r.out)
		}
		e.found = append(e.found, r.finds...)
	}
	if i == len(e.queue) {
		e.queue, e.queued = e.queue[:0], 0
		return
	}
	e.queue = e.queue[i:]
}

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

type pemState int

const (
	pemNotBody pemState = iota
	pemBody
	pemEndLine
)

// next classifies a line after a PEM BEGIN line. At the END line it
// returns what follows the END marker, with the line's indentation, or nil
// when nothing does.
func (p *pemBlock) next(line []byte) (pemState, []byte) {
	cands := [][]byte{trimSpace(line)}
	if n := len(p.prefix); !p.blankPrefix && len(line) > n && line[n-1] == p.prefix[n-1] {
		cands = append(cands, trimSpace(line[n:]))
	}
	for _, c := range cands {
		if bytes.HasPrefix(c, pemEnd) {
			label, n, ok := pemLabel(c[len(pemEnd):])
			if !ok || !bytes.Contains(label, privateKey) {
				continue
			}
			p.add(c[:len(pemEnd)+n])
			rest := c[len(pemEnd)+n:]
			if len(trimSpace(rest)) == 0 {
				return pemEndLine, nil
			}
			ind := indent(line)
			return pemEndLine, append(append([]byte(nil), line[:ind]...), rest...)
		}
		switch {
		case bytes.HasPrefix(c, []byte("Proc-Type:")) || bytes.HasPrefix(c, []byte("DEK-Info:")):
			p.afterHeader = true
			p.add(c)
			return pemBody, nil
		case len(c) == 0 && p.afterHeader:
			p.afterHeader = false
			return pemBody, nil
		case len(c) > 0 && allBytes(c, isB64Byte):
			p.add(c)
			return pemBody, nil
		}
	}
	return pemNotBody, nil
}

func (p *pemBlock) add(b []byte) {
	if p.f.fp != nil {
		p.f.fp.add(b)
	}
}

// key is a mapping key at the start of a line.
type key struct {
	name  []byte
	quote byte // 0, '"' or '\''
	val   int  // index after the ':'
}

func isPlainKeyByte(c byte) bool {
	return isIdentByte(c) || c == '-' || c == '.' || c == '/'
}

// parseKey reads "key:" at pos: a plain key of letters, digits and -._/,
// or a quoted one, followed by ':' and a space or the end of the line.
func parseKey(line []byte, pos int) (key, bool) {
	if pos >= len(line) {
		return key{}, false
	}
	var k key
	i := pos
	switch c := line[pos]; c {
	case '"', '\'':
		end := -1
		if c == '"' {
			end = closeDouble(line, pos+1)
		} else {
			end = closeSingle(line, pos+1)
		}
		if end < 0 {
			return key{}, false
		}
		k.name, k.quote = line[pos+1:end], c
		i = end + 1
		i += indent(line[i:])
		if i >= len(line) || line[i] != ':' {
			return key{}, false
		}
		k.val = i + 1
		return k, true
	}
	for i < len(line) && isPlainKeyByte(line[i]) {
		i++
	}
	if i == pos || i >= len(line) || line[i] != ':' || i+1 < len(line) && !isSpace(line[i+1]) && line[i+1] != '\r' {
		return key{}, false
	}
	k.name, k.val = line[pos:i], i+1
	return k, true
}

type valKind int

const (
	vNone   valKind = iota // nothing: null, or a map or list on the next lines
	vScalar                // a secret candidate in [start, end)
	vBlock                 // a block scalar header in [start, end)
	vOther                 // anything else: not a secret
)

type value struct {
	kind       valKind
	start, end int
	repl       string
	open       bool // '{' or '[' alone: a JSON object or array follows
}

// parseValue reads the value after a key; json says the key was
// double-quoted, so a plain value ends at a comma or bracket.
func parseValue(line []byte, i int, json bool) value {
	i += indent(line[i:])
	end := trimRight(line, len(line))
	if i >= end || line[i] == '#' {
		return value{kind: vNone}
	}
	switch c := line[i]; c {
	case '"', '\'':
		e := -1
		if c == '"' {
			e = closeDouble(line, i+1)
		} else {
			e = closeSingle(line, i+1)
		}
		if e < 0 {
			e = end
		}
		return scalar(line, i+1, e, Marker)
	case '|', '>':
		j := i + 1
		for j < end && (line[j] >= '0' && line[j] <= '9' || line[j] == '+' || line[j] == '-') {
			j++
		}
		if j == end || isSpace(line[j]) && (indent(line[j:])+j == end || line[j+indent(line[j:])] == '#') {
			return value{kind: vBlock, start: i, end: end}
		}
	case '{', '[':
		return value{kind: vOther, open: i+1 == end}
	case '&', '*', '!':
		return value{kind: vOther}
	}
	e := i
	if json {
		for e < end && !(line[e] == ',' || line[e] == '}' || line[e] == ']' || isSpace(line[e])) {
			e++
		}
	} else {
		e = end
		for j := i; j < end; j++ {
			if line[j] == '#' && isSpace(line[j-1]) {
				e = max(i, trimRight(line, j))
				break
			}
		}
	}
	switch string(line[i:e]) {
	case "null", "Null", "NULL", "~", "true", "True", "TRUE", "false", "False", "FALSE":
		return value{kind: vOther, start: i, end: e}
	}
	repl := Marker
	if json {
		repl = `"` + Marker + `"`
	}
	return scalar(line, i, e, repl)
}

func scalar(line []byte, s, e int, repl string) value {
	if e <= s || isPlaceholder(line[s:e]) {
		return value{kind: vOther, start: s, end: max(s, e)}
	}
	return value{kind: vScalar, start: s, end: e, repl: repl}
}
