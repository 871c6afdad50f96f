package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/lodestream/lodestream/wire"
)

// Message files (message poll --output-file, message send --input-file) hold messages in
// upstream's IggyMessage::to_bytes layout, so files move between the two CLIs: per message a
// 64-byte header — checksum u64, id u128, offset u64, timestamp u64, origin_timestamp u64,
// user_headers_length u32, payload_length u32, reserved u64 (zero), all little-endian — then the
// payload, then the user headers.
const messageFileHeaderSize = 64

// messageFileBytesMax bounds what --input-file reads; messages are sent in bounded batches.
const messageFileBytesMax = 1 << 30

// appendMessageFileRecord appends m in the file layout.
func appendMessageFileRecord(b []byte, m *wire.PolledMessage) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.Checksum)
	b = append(b, m.ID[:]...)
	b = binary.LittleEndian.AppendUint64(b, m.Offset)
	b = binary.LittleEndian.AppendUint64(b, m.Timestamp)
	b = binary.LittleEndian.AppendUint64(b, m.OriginTimestamp)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.UserHeaders)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Payload)))
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = append(b, m.Payload...)
	return append(b, m.UserHeaders...)
}

// appendToMessageFile appends messages to path, creating it (0644) when missing, as upstream.
func appendToMessageFile(path string, msgs []wire.PolledMessage) (int, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open output file: %w", err)
	}
	var buf []byte
	for i := range msgs {
		buf = appendMessageFileRecord(buf, &msgs[i])
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return 0, fmt.Errorf("write output file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("close output file %s: %w", path, err)
	}
	return len(buf), nil
}

// readMessageFile reads the messages of path one by one into fn (each keeps its id, payload and
// user headers; offsets and timestamps are assigned again). A truncated or malformed
// record stops the read with an error naming its byte offset.
func readMessageFile(path string, fn func(wire.BatchMessageInput) error) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open input file: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, messageFileBytesMax+1))
	var pos int64
	n := 0
	for {
		var h [messageFileHeaderSize]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fmt.Errorf("input file %s: message header at byte %d: %w", path, pos, err)
		}
		if binary.LittleEndian.Uint64(h[56:]) != 0 {
			return n, fmt.Errorf("input file %s: message at byte %d has non-zero reserved bytes; is it a message file written by 'message poll --output-file'?", path, pos)
		}
		headersLen, payloadLen := binary.LittleEndian.Uint32(h[48:]), binary.LittleEndian.Uint32(h[52:])
		if payloadLen == 0 || payloadLen > wire.BatchPayloadBytesMax || headersLen > wire.BatchUserHeadersBytesMax {
			return n, fmt.Errorf("input file %s: message at byte %d: payload of %d bytes or headers of %d bytes out of bounds", path, pos, payloadLen, headersLen)
		}
		body := make([]byte, int(payloadLen)+int(headersLen))
		if _, err := io.ReadFull(r, body); err != nil {
			return n, fmt.Errorf("input file %s: message at byte %d is truncated: %w", path, pos, err)
		}
		pos += messageFileHeaderSize + int64(len(body))
		if pos > messageFileBytesMax {
			return n, fmt.Errorf("input file %s is larger than %d bytes", path, messageFileBytesMax)
		}
		// A fresh origin time: a batch bounds the spread of its origin times, a file does not.
		m := newMessage(body[:payloadLen])
		copy(m.ID[:], h[8:24])
		if headersLen > 0 {
			m.UserHeaders = body[payloadLen:]
		}
		if err := fn(m); err != nil {
			return n, err
		}
		n++
	}
}
