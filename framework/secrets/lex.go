package secrets

// Byte classes and trimming, for the line scanners.

func allBytes(b []byte, f func(byte) bool) bool {
	for _, c := range b {
		if !f(c) {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// isNameByte is a byte that may continue a word, a file name or a DNS name:
// a bootstrap token next to one is part of something else.
func isNameByte(c byte) bool { return isIdentByte(c) || c == '.' || c == '-' }

func isB64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func indent(b []byte) int {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func trimRight(b []byte, end int) int {
	for end > 0 && (isSpace(b[end-1]) || b[end-1] == '\r') {
		end--
	}
	return end
}

func trimSpace(b []byte) []byte {
	e := trimRight(b, len(b))
	return b[indent(b[:e]):e]
}
