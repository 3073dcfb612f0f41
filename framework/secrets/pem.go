package secrets

import "bytes"

// PEM private keys whose body is on the lines after their BEGIN line.

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
