package integration

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// TestMalformedFrames walks the malformed-input table of docs/node.md: every
// row gets its defined answer (close, status reply, or eviction), and a
// healthy connection next to the offenders keeps working throughout.
func TestMalformedFrames(t *testing.T) {
	srv := startServer(t, "")
	runMalformedRows(t, srv, everyTransport[0])
}

// TestMalformedFramesEveryTransport runs the same table over QUIC,
// WebSocket, TLS and WSS: the answers come from the one session layer.
func TestMalformedFramesEveryTransport(t *testing.T) {
	plain := startServer(t, "")
	secure := startServer(t, "", tlsEnv...)
	for _, tc := range everyTransport[1:] {
		t.Run(tc.name, func(t *testing.T) {
			srv := plain
			if tc.tls {
				srv = secure
			}
			runMalformedRows(t, srv, tc)
		})
	}
}

func runMalformedRows(t *testing.T, srv *server, tc transportCase) {
	healthy := dialRawOn(t, srv, tc)
	healthy.login()

	type answer struct {
		close    bool
		status   wire.ErrorCode
		request  uint64
		eviction wire.EvictionReason
	}
	nr := func(code wire.CommandCode) wire.RequestHeader {
		return wire.RequestHeader{Operation: wire.OpNonReplicated, Code: code}
	}
	rows := []struct {
		name  string
		login bool
		frame func(r *rawConn, session uint64) []byte
		want  answer
	}{
		{"size below 256", false, func(r *rawConn, _ uint64) []byte {
			f := r.request(nr(wire.CodePing), nil)
			binary.LittleEndian.PutUint32(f[48:], 100)
			return f
		}, answer{close: true}},
		{"size above 64 MiB", false, func(r *rawConn, _ uint64) []byte {
			f := r.request(nr(wire.CodePing), nil)
			binary.LittleEndian.PutUint32(f[48:], wire.FrameSizeMax+1)
			return f
		}, answer{close: true}},
		{"command byte not Request", false, func(r *rawConn, _ uint64) []byte {
			f := r.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing, Request: 7}, nil)
			f[60] = 8
			return f
		}, answer{status: wire.ErrInvalidCommand, request: 7}},
		{"client id zero", false, func(r *rawConn, _ uint64) []byte {
			f := r.request(nr(wire.CodePing), nil)
			clear(f[128:144])
			return f
		}, answer{status: wire.ErrInvalidCommand}},
		{"undeclared operation", false, func(r *rawConn, _ uint64) []byte {
			f := r.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Request: 3}, nil)
			f[176] = 77
			return f
		}, answer{status: wire.ErrInvalidCommand, request: 3}},
		{"internal operation", false, func(r *rawConn, _ uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpTruncatePartition, Session: 1, Request: 4}, nil)
		}, answer{status: wire.ErrInvalidCommand, request: 4}},
		{"register with non-zero session", false, func(r *rawConn, _ uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpRegister, Session: 5}, registerBody(t, "iggy", "iggy", wire.ProtocolVersion))
		}, answer{status: wire.ErrInvalidCommand}},
		{"metadata op with session zero", true, func(r *rawConn, _ uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Request: 9}, []byte{3, 'a', 'b', 'c'})
		}, answer{status: wire.ErrInvalidCommand, request: 9}},
		{"bad request checksum", false, func(r *rawConn, _ uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing, RequestChecksum: wire.Uint128{Lo: 12345}}, nil)
		}, answer{status: wire.ErrInvalidFormat}},
		{"undecodable non-replicated body", true, func(r *rawConn, _ uint64) []byte {
			return r.request(nr(wire.CodeGetStream), []byte{9, 9, 9})
		}, answer{status: wire.ErrInvalidCommand}},
		{"undecodable metadata body", true, func(r *rawConn, s uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: s, Request: 1}, []byte{200, 'x'})
		}, answer{status: wire.ErrInvalidCommand, request: 1}},
		{"unknown non-replicated code", true, func(r *rawConn, _ uint64) []byte {
			return r.request(nr(9999), nil)
		}, answer{status: wire.ErrInvalidCommand}},
		{"replicated code sent as non-replicated", true, func(r *rawConn, _ uint64) []byte {
			return r.request(nr(wire.CodeCreateStream), []byte{3, 'a', 'b', 'c'})
		}, answer{status: wire.ErrFeatureUnavailable}},
		{"read before login", false, func(r *rawConn, _ uint64) []byte {
			return r.request(nr(wire.CodeGetStreams), nil)
		}, answer{status: wire.ErrUnauthenticated}},
		{"legacy LoginUser 38", false, func(r *rawConn, _ uint64) []byte {
			return r.request(nr(wire.CodeLoginUser), []byte{4, 'i', 'g', 'g', 'y'})
		}, answer{eviction: wire.EvictMalformedLogin}},
		{"legacy LoginWithPersonalAccessToken 44", false, func(r *rawConn, _ uint64) []byte {
			return r.request(nr(wire.CodeLoginWithPersonalAccessToken), []byte{1, 'x'})
		}, answer{eviction: wire.EvictMalformedLogin}},
		{"register body garbage", false, func(r *rawConn, _ uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpRegister}, []byte{1, 2})
		}, answer{eviction: wire.EvictMalformedLogin}},
		{"register body neither shape", false, func(r *rawConn, _ uint64) []byte {
			// A valid prefix, then a tail that is neither username+password nor a token (a trailing
			// byte after a whole shape is ignored, as upstream does: see TestTrailingBytesOverTheWire).
			b := binary.LittleEndian.AppendUint32(nil, wire.ProtocolVersion)
			b = append(b, 2, 'i', 't', 5, '0', '.', '0', '.', '1', 9)
			return r.request(wire.RequestHeader{Operation: wire.OpRegister}, b)
		}, answer{eviction: wire.EvictMalformedLogin}},
		{"replicated op without a session", false, func(r *rawConn, _ uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: 1, Request: 1}, []byte{3, 'a', 'b', 'c'})
		}, answer{eviction: wire.EvictNoSession}},
		{"partition op without a session", false, func(r *rawConn, _ uint64) []byte {
			return r.request(wire.RequestHeader{Operation: wire.OpSendMessages, Session: 1, Request: 1}, []byte{0})
		}, answer{eviction: wire.EvictNoSession}},
		{"metadata op under another client id", true, func(r *rawConn, s uint64) []byte {
			return r.request(wire.RequestHeader{Client: wire.Uint128{Lo: 42}, Operation: wire.OpCreateStream, Session: s, Request: 1}, []byte{3, 'a', 'b', 'c'})
		}, answer{eviction: wire.EvictNoSession}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := dialRawOn(t, srv, tc)
			var session uint64
			if row.login {
				session = r.login()
			}
			r.write(row.frame(r, session))
			switch {
			case row.want.close:
				r.expectClosed()
			case row.want.eviction != 0:
				r.expectEviction(row.want.eviction)
			default:
				r.expectStatus(row.want.request, row.want.status)
				r.ping() // the connection stays usable after a status answer
			}
			healthy.ping()
		})
	}
}

// TestGarbageConnectionDoesNotDisturbOthers floods one connection with
// random bytes while another keeps pinging.
func TestGarbageConnectionDoesNotDisturbOthers(t *testing.T) {
	srv := startServer(t, "")
	healthy := dialRaw(t, srv.addr)
	healthy.login()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			junk := make([]byte, 4096)
			for {
				select {
				case <-stop:
					return
				default:
				}
				g := dialRaw(t, srv.addr)
				_, _ = rand.Read(junk)
				_ = g.c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = g.c.Write(junk)
				_ = g.c.Close()
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	pings := 0
	for time.Now().Before(deadline) {
		healthy.ping()
		pings++
	}
	close(stop)
	wg.Wait()
	if pings < 10 {
		t.Fatalf("only %d pings answered in a second next to garbage connections", pings)
	}
}
