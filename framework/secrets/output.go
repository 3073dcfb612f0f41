package secrets

// Writing lines out, in order: a line of a section whose kind is not known
// yet (a Secret's data before its kind line) is held back with both
// renderings until the kind is known.

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
