package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// keyLen is the length of a plant's key in the plants bucket.
const keyLen = 8

// plantKey encodes id so that byte order equals numeric order: flipping the
// sign bit maps MinInt64..MaxInt64 onto 0..MaxUint64, and big-endian bytes
// of an unsigned number compare like the number. Negative ids sort first and
// a cursor can seek straight to any id.
func plantKey(id int64) [keyLen]byte {
	var k [keyLen]byte
	binary.BigEndian.PutUint64(k[:], uint64(id)^(1<<63)) //nolint:gosec // G115: the wrap-around is the encoding
	return k
}

// plantID decodes a key made by plantKey.
func plantID(k []byte) (int64, error) {
	if len(k) != keyLen {
		return 0, fmt.Errorf("key %x is %d bytes, want %d", k, len(k), keyLen)
	}
	return int64(binary.BigEndian.Uint64(k) ^ (1 << 63)), nil //nolint:gosec // G115: the inverse of plantKey
}

// A value is the plant's name and optional tag:
//
//	kind byte (valueNoTag or valueTag) | uvarint len(name) | name | tag
//
// The tag is the rest of the value, so an empty tag (kind valueTag, nothing
// after the name) stays distinct from no tag. Two values are compared by
// what they hold (samePlant), not byte for byte, so that a later format
// (a revision, say) can add to a value and still match its plant.
const (
	valueNoTag byte = 0
	valueTag   byte = 1
)

// appendValue appends p's value encoding to dst.
func appendValue(dst []byte, p plant.Plant) []byte {
	kind := valueNoTag
	if p.Tag != nil {
		kind = valueTag
	}
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(p.Name)))
	dst = append(dst, p.Name...)
	if p.Tag != nil {
		dst = append(dst, *p.Tag...)
	}
	return dst
}

// valueLen is the exact length appendValue produces, to allocate once.
func valueLen(p plant.Plant) int {
	n := 1 + uvarintLen(uint64(len(p.Name))) + len(p.Name)
	if p.Tag != nil {
		n += len(*p.Tag)
	}
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

var errCorruptValue = errors.New("corrupt plant value")

// content is what a value holds, as slices of it: no copy, no allocation.
type content struct {
	name, tag []byte
	tagged    bool
}

// parseValue splits a value into its content.
func parseValue(v []byte) (content, bool) {
	if len(v) < 2 || v[0] > valueTag {
		return content{}, false
	}
	n, w := binary.Uvarint(v[1:])
	rest := v[1+max(w, 0):]
	if w <= 0 || n > uint64(len(rest)) {
		return content{}, false
	}
	c := content{name: rest[:n], tag: rest[n:], tagged: v[0] == valueTag}
	if !c.tagged && len(c.tag) > 0 {
		return content{}, false
	}
	return c, true
}

// samePlant reports whether two values hold the same name and tag: a
// create of an id already stored is a retry when they do, a conflict when
// they do not (or when the stored value does not parse).
func samePlant(stored, value []byte) bool {
	if bytes.Equal(stored, value) { // the common case, in a few ns; value is always well formed
		return true
	}
	a, okA := parseValue(stored)
	b, okB := parseValue(value)
	return okA && okB && a.tagged == b.tagged && bytes.Equal(a.name, b.name) && bytes.Equal(a.tag, b.tag)
}

// decodePlant rebuilds the plant stored under key k with value v. It copies
// what it keeps: bbolt's slices are only valid inside the transaction.
func decodePlant(k, v []byte) (plant.Plant, error) {
	id, err := plantID(k)
	if err != nil {
		return plant.Plant{}, err
	}
	c, ok := parseValue(v)
	if !ok {
		return plant.Plant{}, fmt.Errorf("plant %d: %w", id, errCorruptValue)
	}
	p := plant.Plant{ID: id, Name: string(c.name)}
	if c.tagged {
		p.Tag = plant.StringPtr(string(c.tag))
	}
	return p, nil
}

// The tag index maps tag to ids with one empty-valued key per tagged plant:
//
//	digest(tag) | plantKey(id)
//
// A digest rather than the tag itself keeps every index key at a fixed 24
// bytes: a tag may be as long as the request body allows, beyond bbolt's
// 32 KiB key limit, and a fixed-width prefix means one tag's keys can never
// run into another's. Keys under one digest sort by id, so a filtered page
// seeks like an unfiltered one. The list reads each plant anyway (it needs
// the name), and keeps it only when the stored tag matches, so a digest
// collision could cost a skipped entry but never a wrong answer.
const digestLen = 16

func tagDigest(tag string) [digestLen]byte {
	sum := sha256.Sum256([]byte(tag))
	return [digestLen]byte(sum[:digestLen])
}

// indexKey is the tag index key of a plant with tag digest d and id.
func indexKey(d [digestLen]byte, id int64) []byte {
	pk := plantKey(id)
	k := make([]byte, 0, digestLen+keyLen)
	return append(append(k, d[:]...), pk[:]...)
}
