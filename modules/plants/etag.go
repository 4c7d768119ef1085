package plants

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// ETag returns the strong entity tag of a stored plant: a digest of its name
// and tag. It is derived from the content rather than from a stored version
// number, so every replica and every store computes the same validator for
// the same plant, across restarts and across a move between stores (export
// from bolt, import into postgres), and no store needs a migration for it.
// The cost of that choice: a plant changed and changed back (A, B, A) has
// its first tag again, which is right for a validator of the representation
// (RFC 9110 §8.8.1: it names the content, not the history). SHA-256 cut to
// 128 bits keeps two different plants from sharing a tag by accident.
func ETag(p plant.Plant) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	// The name's length first, so that name "ab" + tag "c" and name "a" +
	// tag "bc" hash differently; then whether there is a tag at all, since
	// an empty tag is not a missing one.
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(p.Name)))])
	h.Write([]byte(p.Name))
	if p.Tag != nil {
		h.Write([]byte{1})
		h.Write([]byte(*p.Tag))
	} else {
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:16]) + `"`
}
