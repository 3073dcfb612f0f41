package secrets

import (
	"bytes"
	"encoding/base64"
)

// PEM keys on one line, as text or base64-encoded (kubeconfig data).

// pemLabel reads "LABEL-----" at the start of b and returns the label and
// the length read, or ok false.
func pemLabel(b []byte) (label []byte, n int, ok bool) {
	for i := 0; i < len(b) && i <= 64; i++ {
		c := b[i]
		if c == '-' {
			if bytes.HasPrefix(b[i:], pemDashes) && i > 0 {
				return b[:i], i + len(pemDashes), true
			}
			return nil, 0, false
		}
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ') {
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// isPEMRunByte is a byte that may continue a PEM block written on one line:
// base64, the headers of an encrypted key, spaces and the "\n" escapes of a
// JSON string. It stops at quotes, so a JSON string keeps its end.
func isPEMRunByte(c byte) bool {
	return isB64Byte(c) || c == '\\' || c == ' ' || c == '\t' || c == ':' || c == ',' || c == '-'
}

func findPEM(line []byte, spans []span) ([]span, int) {
	open := -1
	// 'P' is rarer in logs than '-': look for the label first.
	if bytes.Index(line, privateKey) < 0 {
		return spans, open
	}
	for i := 0; i < len(line); {
		j := bytes.Index(line[i:], pemBegin)
		if j < 0 {
			break
		}
		j += i
		h := j + len(pemBegin)
		label, n, ok := pemLabel(line[h:])
		if !ok || !bytes.Contains(label, privateKey) {
			i = h
			continue
		}
		h += n
		end := -1
		if k := bytes.Index(line[h:], pemEnd); k >= 0 {
			m := h + k + len(pemEnd)
			if label, n, ok := pemLabel(line[m:]); ok && bytes.Contains(label, privateKey) {
				end = m + n
			}
		}
		if end < 0 {
			end = h
			for end < len(line) && isPEMRunByte(line[end]) {
				end++
			}
			// Spaces after the run stay, lest a YAML comment that follows
			// become part of the value.
			for end > h && isSpace(line[end-1]) {
				end--
			}
			if trimRight(line, len(line)) <= end {
				open = j
			}
		}
		spans = append(spans, span{j, end, KindPrivateKey, PEMMarker})
		i = end
	}
	return spans, open
}

func findB64PEM(line []byte, spans []span) []span {
	var buf [72]byte
	for i := 0; i < len(line); {
		j := bytes.Index(line[i:], b64Begin)
		if j < 0 {
			break
		}
		j += i
		end := j
		for end < len(line) && isB64Byte(line[end]) {
			end++
		}
		i = end
		if j > 0 && isB64Byte(line[j-1]) {
			continue
		}
		seg := bytes.TrimRight(line[j:end], "=")
		if len(seg) > 96 {
			seg = seg[:96]
		}
		seg = seg[:len(seg)&^3]
		n, err := base64.StdEncoding.Decode(buf[:], seg)
		if err != nil || !bytes.Contains(buf[:n], privateKey) {
			continue
		}
		spans = append(spans, span{j, end, KindPrivateKey, Marker})
	}
	return spans
}
