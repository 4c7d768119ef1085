package plants

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"

	"github.com/plantstore/plantstore/modules/changes"
)

// A cursor's text is opaque to clients: base64url without padding of 16
// bytes, the cursor's Tx then its Version, both big-endian. One spelling
// per cursor (the strict decoding refuses stray bits in the last
// character), so that a client can compare two cursors for equality.
var cursorEncoding = base64.RawURLEncoding.Strict()

// cursorTextLen is the length of every cursor's text: 16 bytes in base64.
const cursorTextLen = 22

// EncodeCursor is the text of c, as the change feed and the listing's
// Plantstore-Changes-Cursor header give it.
func EncodeCursor(c changes.Cursor) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], c.Tx)
	binary.BigEndian.PutUint64(b[8:], uint64(c.Version)) //nolint:gosec // G115: the bits, read back as they were
	return cursorEncoding.EncodeToString(b[:])
}

// ParseCursor reads a cursor's text; source names where it came from (a
// query parameter, a header) in the *BadRequestError of a malformed one.
func ParseCursor(source, s string) (changes.Cursor, error) {
	var b [16]byte
	if len(s) != cursorTextLen {
		return changes.Cursor{}, malformedCursor(source, s)
	}
	if n, err := cursorEncoding.Decode(b[:], []byte(s)); err != nil || n != len(b) {
		return changes.Cursor{}, malformedCursor(source, s)
	}
	c := changes.Cursor{Tx: binary.BigEndian.Uint64(b[:8]), Version: int64(binary.BigEndian.Uint64(b[8:]))} //nolint:gosec // G115: the bits EncodeCursor wrote
	// No store gives a negative version: not a cursor of ours.
	if c.Version < 0 {
		return changes.Cursor{}, malformedCursor(source, s)
	}
	return c, nil
}

func malformedCursor(source, s string) error {
	return badRequest(source + ` must be a cursor this API gave (a page's "next", an event's id, or a Plantstore-Changes-Cursor header), not ` + strconv.Quote(clip(s)))
}
