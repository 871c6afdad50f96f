package nemesis

import (
	"bytes"
	"strconv"

	"github.com/zeebo/xxh3"
)

// Payloads are "<producer>-<seq>-<i>|<padding>": unique in a run, and
// regenerated from the batch when needed, so the history keeps no payload
// bytes (an hour's soak sends millions of messages) and the read-back keeps
// one hash per stored message.

// payloadOf is message i of batch seq of producer name, padded to size.
func payloadOf(name string, seq, i, size int) []byte {
	b := make([]byte, 0, max(size, 24))
	b = append(b, name...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(i), 10)
	if pad := size - len(b); pad > 0 {
		b = append(b, '|')
		for j := 1; j < pad; j++ {
			b = append(b, byte('a'+j%26))
		}
	}
	return b
}

// parseTag reads producer, seq and index back from a payload.
func parseTag(p []byte) (name string, seq, i int, ok bool) {
	if k := bytes.IndexByte(p, '|'); k >= 0 {
		p = p[:k]
	}
	parts := bytes.Split(p, []byte{'-'})
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	seq, err1 := strconv.Atoi(string(parts[1]))
	i, err2 := strconv.Atoi(string(parts[2]))
	if err1 != nil || err2 != nil || seq < 0 || i < 0 {
		return "", 0, 0, false
	}
	return string(parts[0]), seq, i, true
}

func hashOf(b []byte) uint64 { return xxh3.Hash(b) }
