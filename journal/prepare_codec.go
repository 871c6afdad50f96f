package journal

import (
	"encoding/binary"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// Encoded consensus.Prepare (little-endian):
//
//	view u32 | op u64 | commit u64 | timestamp u64 | parent u64 | checksum u64 |
//	client u128 (lo, hi) | session u64 | request u64 | req_sum u64 |
//	operation u8 | user_id u32 | body_len u32 | body
const prepareFixedBytes = 4 + 8*5 + 16 + 8*3 + 1 + 4 + 4

func appendPrepare(buf []byte, p *consensus.Prepare) []byte {
	h := &p.Header
	le := binary.LittleEndian
	buf = le.AppendUint32(buf, h.View)
	buf = le.AppendUint64(buf, h.Op)
	buf = le.AppendUint64(buf, h.Commit)
	buf = le.AppendUint64(buf, h.Timestamp)
	buf = le.AppendUint64(buf, h.Parent)
	buf = le.AppendUint64(buf, h.Checksum)
	buf = le.AppendUint64(buf, h.Client.Lo)
	buf = le.AppendUint64(buf, h.Client.Hi)
	buf = le.AppendUint64(buf, h.Session)
	buf = le.AppendUint64(buf, h.Request)
	buf = le.AppendUint64(buf, h.ReqSum)
	buf = append(buf, uint8(h.Operation))
	buf = le.AppendUint32(buf, h.UserID)
	buf = le.AppendUint32(buf, uint32(len(p.Body)))
	return append(buf, p.Body...)
}

func decodePrepare(b []byte) (consensus.Prepare, error) {
	if len(b) < prepareFixedBytes {
		return consensus.Prepare{}, fmt.Errorf("prepare: %d bytes is shorter than the %d-byte header", len(b), prepareFixedBytes)
	}
	le := binary.LittleEndian
	var h consensus.PrepareHeader
	h.View = le.Uint32(b[0:])
	h.Op = le.Uint64(b[4:])
	h.Commit = le.Uint64(b[12:])
	h.Timestamp = le.Uint64(b[20:])
	h.Parent = le.Uint64(b[28:])
	h.Checksum = le.Uint64(b[36:])
	h.Client.Lo = le.Uint64(b[44:])
	h.Client.Hi = le.Uint64(b[52:])
	h.Session = le.Uint64(b[60:])
	h.Request = le.Uint64(b[68:])
	h.ReqSum = le.Uint64(b[76:])
	h.Operation = consensus.Operation(b[84])
	h.UserID = le.Uint32(b[85:])
	bodyLen := le.Uint32(b[89:])
	if uint64(bodyLen) != uint64(len(b)-prepareFixedBytes) {
		return consensus.Prepare{}, fmt.Errorf("prepare op %d: body length %d does not match %d remaining bytes", h.Op, bodyLen, len(b)-prepareFixedBytes)
	}
	var body []byte
	if bodyLen > 0 {
		body = make([]byte, bodyLen)
		copy(body, b[prepareFixedBytes:])
	}
	return consensus.Prepare{Header: h, Body: body}, nil
}
