package memstore

import "math"

// texts keeps the names and tags of stored plants in large append-only byte
// blocks, addressed by textRef. Blocks hold no pointers, so the garbage
// collector never looks inside them: a store of a million plants costs it
// a few hundred blocks instead of three million strings.
type texts struct {
	blocks [][]byte
	live   int // bytes that records still refer to
	total  int // bytes appended, deleted ones included
}

// blockSize is the size of a block; a longer text gets a block of its own.
const blockSize = 256 << 10

// maxTextLen is the longest text a textRef can locate.
const maxTextLen = math.MaxUint32

// textRef locates one text in texts.
type textRef struct {
	block, off, len uint32
}

// add copies the concatenation of a and b into the blocks.
func (t *texts) add(a, b string) textRef {
	ref, block := t.reserve(len(a) + len(b))
	block = append(block, a...)
	t.blocks[ref.block] = append(block, b...)
	return ref
}

// addBytes copies text into the blocks.
func (t *texts) addBytes(text []byte) textRef {
	ref, block := t.reserve(len(text))
	t.blocks[ref.block] = append(block, text...)
	return ref
}

// reserve returns where a text of n bytes goes, and the block to append it
// to: the last one, or a new one when it is full.
func (t *texts) reserve(n int) (textRef, []byte) {
	last := len(t.blocks) - 1
	if last < 0 || cap(t.blocks[last])-len(t.blocks[last]) < n {
		t.blocks = append(t.blocks, make([]byte, 0, max(blockSize, n)))
		last++
	}
	t.live += n
	t.total += n
	// No conversion overflows: n is at most maxTextLen (checked by Create),
	// a block holds at most max(blockSize, maxTextLen) bytes, and 2^32
	// blocks of at least 256 KiB would be a petabyte.
	return textRef{
		block: uint32(last),                //nolint:gosec // G115: see above
		off:   uint32(len(t.blocks[last])), //nolint:gosec // G115: see above
		len:   uint32(n),                   //nolint:gosec // G115: see above
	}, t.blocks[last]
}

// bytes returns the text at ref; it is valid until the next compaction.
func (t *texts) bytes(ref textRef) []byte {
	return t.blocks[ref.block][ref.off : ref.off+ref.len]
}

// drop records that the text at ref is no longer referred to.
func (t *texts) drop(ref textRef) { t.live -= int(ref.len) }

// wasteful reports whether deleted texts take more room than live ones, so
// that a compaction would at least halve the blocks.
func (t *texts) wasteful() bool {
	return t.total > 2*blockSize && t.total-t.live > t.live
}
