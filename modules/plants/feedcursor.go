package plants

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"

	"github.com/plantstore/plantstore/modules/changes"
)

// A cursor's text is opaque to clients: base64url without padding of 24
// bytes, the cursor's History, Tx and Version, big-endian. One spelling
// per cursor (the strict decoding refuses stray bits in the last
// character), so that a client can compare two cursors for equality.
// Whether it is a position of this store's history is the store's to say
// (changes.CheckCursor): a well-formed cursor of another history is a 410,
// not a 400, as the follower's way on is the same as past the retention.
var cursorEncoding = base64.RawURLEncoding.Strict()

// cursorLen and cursorTextLen are the length of every cursor, and of its
// text in base64.
const (
	cursorLen     = 24
	cursorTextLen = 32
)

// EncodeCursor is the text of c, as the change feed and the listing's
// Plantstore-Changes-Cursor header give it.
func EncodeCursor(c changes.Cursor) string {
	var b [cursorLen]byte
	binary.BigEndian.PutUint64(b[:8], c.History)
	binary.BigEndian.PutUint64(b[8:16], c.Tx)
	binary.BigEndian.PutUint64(b[16:], uint64(c.Version)) //nolint:gosec // G115: the bits, read back as they were
	return cursorEncoding.EncodeToString(b[:])
}

// ParseCursor reads a cursor's text; source names where it came from (a
// query parameter, a header) in the *badRequestError of a malformed one.
func ParseCursor(source, s string) (changes.Cursor, error) {
	var b [cursorLen]byte
	if len(s) != cursorTextLen {
		return changes.Cursor{}, malformedCursor(source, s)
	}
	if n, err := cursorEncoding.Decode(b[:], []byte(s)); err != nil || n != len(b) {
		return changes.Cursor{}, malformedCursor(source, s)
	}
	c := changes.Cursor{History: binary.BigEndian.Uint64(b[:8]), Tx: binary.BigEndian.Uint64(b[8:16]), Version: int64(binary.BigEndian.Uint64(b[16:]))} //nolint:gosec // G115: the bits EncodeCursor wrote
	// No store gives a negative version: not a cursor of ours.
	if c.Version < 0 {
		return changes.Cursor{}, malformedCursor(source, s)
	}
	return c, nil
}

func malformedCursor(source, s string) error {
	return badRequest(source + ` must be a cursor this API gave (a page's "next", an event's id, or a Plantstore-Changes-Cursor header), not ` + strconv.Quote(clip(s)))
}
