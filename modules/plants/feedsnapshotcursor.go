package plants

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/plantstore/plantstore/modules/changes"
)

// A snapshot's cursor (the next of a page, or an event's id, while a
// snapshot is being read) is opaque like a change's, and longer: base64url
// without padding of 41 bytes, the position's cursor (as EncodeCursor),
// the last id given, a byte that says whether a tag filter was given, and
// that tag's 64-bit FNV-1a digest. The digest binds the cursor to its
// filter: the plants given so far were chosen by it, and a page of another
// tag would leave a follower with a copy of neither.
const (
	snapshotCursorLen     = cursorLen + 8 + 1 + 8
	snapshotCursorTextLen = 55
)

// snapshotCursor is a snapshot's position and the tag it was read with.
type snapshotCursor struct {
	pos changes.SnapshotPosition // Last is set
	tag tagDigest
}

// tagDigest names a tag filter: none, or a tag by its digest.
type tagDigest struct {
	set    bool
	digest uint64
}

func digestTag(tag *string) tagDigest {
	if tag == nil {
		return tagDigest{}
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(*tag)) // a hash's Write never fails
	return tagDigest{set: true, digest: h.Sum64()}
}

// encodeSnapshotCursor is the text of a snapshot's position read with tag.
func encodeSnapshotCursor(pos changes.SnapshotPosition, tag tagDigest) string {
	var b [snapshotCursorLen]byte
	c := pos.Cursor
	binary.BigEndian.PutUint64(b[:8], c.History)
	binary.BigEndian.PutUint64(b[8:16], c.Tx)
	binary.BigEndian.PutUint64(b[16:24], uint64(c.Version)) //nolint:gosec // G115: the bits, read back as they were
	binary.BigEndian.PutUint64(b[24:32], uint64(*pos.Last)) //nolint:gosec // G115: the bits, read back as they were
	if tag.set {
		b[32] = 1
		binary.BigEndian.PutUint64(b[33:], tag.digest)
	}
	return cursorEncoding.EncodeToString(b[:])
}

// parseSnapshotCursor reads a snapshot cursor's text; false when s is not
// one.
func parseSnapshotCursor(s string) (snapshotCursor, bool) {
	var b [snapshotCursorLen]byte
	if len(s) != snapshotCursorTextLen {
		return snapshotCursor{}, false
	}
	if n, err := cursorEncoding.Decode(b[:], []byte(s)); err != nil || n != len(b) {
		return snapshotCursor{}, false
	}
	version := int64(binary.BigEndian.Uint64(b[16:24])) //nolint:gosec // G115: the bits encodeSnapshotCursor wrote
	last := int64(binary.BigEndian.Uint64(b[24:32]))    //nolint:gosec // G115: the bits encodeSnapshotCursor wrote
	if version < 0 || b[32] > 1 || (b[32] == 0 && binary.BigEndian.Uint64(b[33:]) != 0) {
		return snapshotCursor{}, false
	}
	c := snapshotCursor{pos: changes.SnapshotPosition{
		Cursor: changes.Cursor{History: binary.BigEndian.Uint64(b[:8]), Tx: binary.BigEndian.Uint64(b[8:16]), Version: version},
		Last:   &last,
	}}
	if b[32] == 1 {
		c.tag = tagDigest{set: true, digest: binary.BigEndian.Uint64(b[33:])}
	}
	return c, true
}
