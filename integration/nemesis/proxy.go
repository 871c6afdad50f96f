package nemesis

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"sync"
	"time"
)

// Replica-bus frames: a 256-byte header whose u32 at offset 48 is the
// frame's whole size (docs/bus.md). The proxy cuts the byte stream into
// frames so that it drops or delays whole frames, never a part of one:
// a dropped frame is a lost message, as VSR expects from a network, not a
// corrupt stream.
const (
	busHeaderSize   = 256
	busSizeOffset   = 48
	busFrameMax     = 64 << 20 // [message_bus] max_message_size default
	proxyQueueLimit = 4096     // frames in flight per direction (delay queue)
)

// Dir is a direction of a replica link.
type Dir int

const (
	// Fwd carries the bytes of the lower replica id (the dialer) to the higher.
	Fwd Dir = 0
	// Back carries the higher id's bytes to the lower.
	Back Dir = 1
)

// DirFault is what the proxy does to one direction of a link.
type DirFault struct {
	Drop      float64       // probability of dropping each frame
	Delay     time.Duration // added to every frame
	Jitter    time.Duration // uniform extra delay (order is kept: a frame never overtakes)
	Blackhole bool          // drop every frame (the TCP connection stays up)
}

func (f DirFault) String() string {
	switch {
	case f.Blackhole:
		return "blackhole"
	case f.Drop > 0 && f.Delay > 0:
		return fmt.Sprintf("drop %.0f%% delay %s+%s", f.Drop*100, f.Delay, f.Jitter)
	case f.Drop > 0:
		return fmt.Sprintf("drop %.0f%%", f.Drop*100)
	case f.Delay > 0:
		return fmt.Sprintf("delay %s+%s", f.Delay, f.Jitter)
	}
	return "clear"
}

// Links holds one proxy per unordered replica pair.
type Links struct {
	log   *slog.Logger
	mu    sync.Mutex
	links map[[2]int]*link
	rng   *rand.Rand
}

type link struct {
	a, b     int
	target   string
	ln       net.Listener
	mu       sync.Mutex
	fault    [2]DirFault
	severed  bool
	conns    map[*proxyConn]struct{}
	rng      *rand.Rand
	wg       sync.WaitGroup
	closed   bool
	frames   [2]uint64 // forwarded
	dropped  [2]uint64
	accepted uint64
}

type proxyConn struct {
	in, out net.Conn
	once    sync.Once
}

func (pc *proxyConn) close() {
	pc.once.Do(func() {
		pc.in.Close()
		pc.out.Close()
	})
}

func newLinks(log *slog.Logger, seed int64) *Links {
	return &Links{log: log, links: map[[2]int]*link{}, rng: rand.New(rand.NewSource(seed ^ 0x5eed))}
}

func (ls *Links) add(a, b int, listen, target string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("proxy %d-%d: listen %s: %w", a, b, listen, err)
	}
	l := &link{a: a, b: b, target: target, ln: ln, conns: map[*proxyConn]struct{}{},
		rng: rand.New(rand.NewSource(ls.rng.Int63()))}
	ls.mu.Lock()
	ls.links[[2]int{a, b}] = l
	ls.mu.Unlock()
	l.wg.Add(1)
	go l.accept()
	return nil
}

func (ls *Links) get(a, b int) *link {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.links[[2]int{min(a, b), max(a, b)}]
}

// SetOneWay sets the fault on the frames from replica from to replica to.
func (ls *Links) SetOneWay(from, to int, f DirFault) {
	l := ls.get(from, to)
	d := Fwd
	if from > to {
		d = Back
	}
	l.mu.Lock()
	l.fault[d] = f
	l.mu.Unlock()
}

// Sever closes the link's connections and refuses new ones until Heal.
func (ls *Links) Sever(a, b int) {
	l := ls.get(a, b)
	l.mu.Lock()
	l.severed = true
	conns := l.conns
	l.conns = map[*proxyConn]struct{}{}
	l.mu.Unlock()
	for pc := range conns {
		pc.close()
	}
}

// HealAll clears every fault.
func (ls *Links) HealAll() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.links {
		l.mu.Lock()
		l.fault = [2]DirFault{}
		l.severed = false
		l.mu.Unlock()
	}
}

// Counters sums forwarded and dropped frames over every link.
func (ls *Links) Counters() (forwarded, dropped, accepted uint64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.links {
		l.mu.Lock()
		forwarded += l.frames[0] + l.frames[1]
		dropped += l.dropped[0] + l.dropped[1]
		accepted += l.accepted
		l.mu.Unlock()
	}
	return
}

// Close stops every proxy and closes its connections.
func (ls *Links) Close() {
	ls.mu.Lock()
	links := ls.links
	ls.links = map[[2]int]*link{}
	ls.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

func (l *link) close() {
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = map[*proxyConn]struct{}{}
	l.mu.Unlock()
	l.ln.Close()
	for pc := range conns {
		pc.close()
	}
	l.wg.Wait()
}

func (l *link) accept() {
	defer l.wg.Done()
	for {
		in, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		refuse := l.severed || l.closed
		l.accepted++
		l.mu.Unlock()
		if refuse {
			in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", l.target, 2*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		pc := &proxyConn{in: in, out: out}
		l.mu.Lock()
		if l.severed || l.closed {
			l.mu.Unlock()
			pc.close()
			continue
		}
		l.conns[pc] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(2)
		go l.pump(pc, in, out, Fwd)
		go l.pump(pc, out, in, Back)
	}
}

type timedFrame struct {
	due time.Time
	b   []byte
}

// pump copies frames from src to dst applying the direction's fault. A
// writer goroutine releases delayed frames in order.
func (l *link) pump(pc *proxyConn, src, dst net.Conn, d Dir) {
	defer l.wg.Done()
	defer pc.close()
	queue := make(chan timedFrame, proxyQueueLimit)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range queue {
			if wait := time.Until(f.due); wait > 0 {
				time.Sleep(wait)
			}
			_ = dst.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := dst.Write(f.b); err != nil {
				pc.close()
				// Drain so the reader never blocks on a dead writer.
				for range queue {
				}
				return
			}
		}
	}()
	defer func() {
		close(queue)
		<-done
	}()
	hdr := make([]byte, busHeaderSize)
	for {
		if _, err := io.ReadFull(src, hdr); err != nil {
			return
		}
		size := binary.LittleEndian.Uint32(hdr[busSizeOffset:])
		if size < busHeaderSize || size > busFrameMax {
			return // not a bus frame: cut the connection as the bus would
		}
		frame := make([]byte, size)
		copy(frame, hdr)
		if _, err := io.ReadFull(src, frame[busHeaderSize:]); err != nil {
			return
		}
		l.mu.Lock()
		f := l.fault[d]
		drop := f.Blackhole || (f.Drop > 0 && l.rng.Float64() < f.Drop)
		delay := f.Delay
		if f.Jitter > 0 {
			delay += time.Duration(l.rng.Int63n(int64(f.Jitter)))
		}
		if drop {
			l.dropped[d]++
		} else {
			l.frames[d]++
		}
		l.mu.Unlock()
		if drop {
			continue
		}
		queue <- timedFrame{due: time.Now().Add(delay), b: frame}
	}
}
