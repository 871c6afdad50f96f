package journal

// tornHoleSectorBytes is the granularity at which a write's pages reach
// the disk (the smallest device sector).
const tornHoleSectorBytes = 512

// holeEvidence says whether the bytes of a damaged span (b, starting at
// file offset off and ending where a valid record of the same write
// starts) show a torn write's hole rather than bit rot: a sector of the
// write that never reached the disk reads as zeros (the file grew past
// its synced end), so either the span's first piece (from off to the next
// sector boundary: the damaged record's start, its magic included) or a
// whole sector inside it is all zero. Rot flips bits of written data and
// stays damage to synced state.
func holeEvidence(b []byte, off int64) bool {
	first := int(min(int64(len(b)), tornHoleSectorBytes-off%tornHoleSectorBytes))
	if allZero(b[:first]) {
		return true
	}
	for i := first; i+tornHoleSectorBytes <= len(b); i += tornHoleSectorBytes {
		if allZero(b[i : i+tornHoleSectorBytes]) {
			return true
		}
	}
	return false
}

func allZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return len(b) > 0
}
