package tokenizer

import "unicode/utf8"

// byteRune maps each byte to the printable rune that stands for it in
// byte-level vocabularies (GPT-2's bytes_to_unicode): printable Latin-1
// bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves, the other 68 bytes
// to U+0100, U+0101, ... in byte order, so that no token contains a space or
// a control character.
var byteRune [256]rune

// runeByte is the inverse of byteRune: runeByte[r] is the byte r stands
// for, or -1 (byteRune's values are all below 324).
var runeByte [324]int16

// byteOrder lists the bytes in GPT-2's vocabulary order: the bytes that map
// to themselves first, then the others. Train gives byte tokens ids in this
// order, like GPT-2 and Qwen2 vocabularies do.
var byteOrder [256]byte

func init() {
	n := 0
	self := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	for b := 0; b < 256; b++ {
		if self(b) {
			byteRune[b] = rune(b)
			byteOrder[n] = byte(b)
			n++
		}
	}
	next := rune(256)
	for b := 0; b < 256; b++ {
		if !self(b) {
			byteRune[b] = next
			next++
			byteOrder[n] = byte(b)
			n++
		}
	}
	for r := range runeByte {
		runeByte[r] = -1
	}
	for b := 0; b < 256; b++ {
		runeByte[byteRune[b]] = int16(b)
	}
}

// toByteLevel writes the raw bytes s in the byte-level alphabet.
func toByteLevel(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = utf8.AppendRune(buf, byteRune[s[i]])
	}
	return string(buf)
}

// fromByteLevel turns a byte-level token back into raw bytes. ok is false if
// a rune is outside the alphabet; then, like Hugging Face's ByteLevel
// decoder, callers use the token's own UTF-8 bytes.
func fromByteLevel(tok string) (raw string, ok bool) {
	buf := make([]byte, 0, len(tok))
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeByte) || runeByte[r] < 0 {
			return "", false
		}
		buf = append(buf, byte(runeByte[r]))
	}
	return string(buf), true
}
