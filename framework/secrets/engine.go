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
