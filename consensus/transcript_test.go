package consensus

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTranscripts runs every testdata/*.txt transcript. Each file states
// the protocol rule it checks; each `expect` line is an assertion. The
// harness additionally checks, on every Ready, persist-before-send and that
// applied logs never diverge.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runTranscript(t, f) })
	}
}

type transcript struct {
	t    *testing.T
	h    *harness
	line int
	file string
	tags map[string]uint64
}

func runTranscript(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts := &transcript{t: t, file: filepath.Base(path), tags: map[string]uint64{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ts.line++
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		ts.exec(strings.Fields(line))
		if t.Failed() {
			return
		}
	}
}

func (ts *transcript) failf(format string, args ...any) {
	ts.t.Helper()
	ts.t.Fatalf("%s:%d: %s", ts.file, ts.line, fmt.Sprintf(format, args...))
}

func (ts *transcript) kv(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			ts.failf("argument %q is not key=value", a)
		}
		out[k] = v
	}
	return out
}

func (ts *transcript) num(s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		ts.failf("bad number %q", s)
	}
	return v
}

func (ts *transcript) replica(s string) int {
	i := int(ts.num(s))
	if ts.h == nil || i >= len(ts.h.replicas) {
		ts.failf("no replica %q", s)
	}
	return i
}

// repeat parses an optional trailing "xN".
func (ts *transcript) repeat(args []string) ([]string, int) {
	if n := len(args); n > 0 && strings.HasPrefix(args[n-1], "x") {
		return args[:n-1], int(ts.num(args[n-1][1:]))
	}
	return args, 1
}

func (ts *transcript) exec(f []string) {
	cmd, args := f[0], f[1:]
	switch cmd {
	case "replicas":
		ts.cmdReplicas(args)
	case "propose":
		ts.cmdPropose(args)
	case "tick":
		args, n := ts.repeat(args)
		for k := 0; k < n; k++ {
			if args[0] == "all" {
				for i := range ts.h.replicas {
					ts.h.tick(i)
				}
			} else {
				ts.h.tick(ts.replica(args[0]))
			}
		}
	case "run": // rounds of: tick every replica, deliver everything
		_, n := ts.repeat(args)
		for k := 0; k < n; k++ {
			for i := range ts.h.replicas {
				ts.h.tick(i)
			}
			ts.h.deliverAll()
		}
	case "deliver":
		ts.h.deliverAll()
	case "drop", "heal":
		ts.cmdLinks(cmd == "drop", args)
	case "isolate":
		i := ts.replica(args[0])
		for j := range ts.h.replicas {
			if j != i {
				ts.h.dropped[[2]uint8{uint8(i), uint8(j)}] = true
				ts.h.dropped[[2]uint8{uint8(j), uint8(i)}] = true
			}
		}
	case "crash":
		ts.h.crash(ts.replica(args[0]))
	case "restart":
		if err := ts.h.restart(ts.replica(args[0])); err != nil {
			ts.failf("restart: %v", err)
		}
	case "checkpoint":
		pad := 0
		if len(args) > 1 {
			pad = int(ts.num(ts.kv(args[1:])["pad"]))
		}
		if err := ts.h.checkpoint(ts.replica(args[0]), pad); err != nil {
			ts.failf("checkpoint: %v", err)
		}
	case "pause":
		ts.h.paused[ts.replica(args[0])] = true
	case "resume":
		i := ts.replica(args[0])
		ts.h.paused[i] = false
		ts.h.drain(i)
	case "hold": // messages delivered to R are held back (in order) until unhold
		ts.h.held[ts.replica(args[0])] = true
	case "unhold": // stop holding; the held messages stay held
		delete(ts.h.held, ts.replica(args[0]))
	case "release": // deliver R's held messages to it now [only=KIND] [first]
		i := ts.replica(args[0])
		only := MessageKind(0)
		firstOnly := false // deliver just the oldest matching message
		for _, a := range args[1:] {
			switch {
			case a == "first":
				firstOnly = true
			case strings.HasPrefix(a, "only="):
				k, ok := kindNames[strings.TrimPrefix(a, "only=")]
				if !ok {
					ts.failf("unknown message kind in %q", a)
				}
				only = k
			default:
				ts.failf("unknown release option %q", a)
			}
		}
		var keep []Message
		released := 0
		for _, m := range ts.h.stash[i] {
			if (only != 0 && m.Kind != only) || (firstOnly && released > 0) {
				keep = append(keep, m)
				continue
			}
			released++
			if ts.h.up[i] {
				ts.h.replicas[i].Step(m)
				ts.h.drain(i)
			}
		}
		ts.h.stash[i] = keep
	case "discard": // forget R's held messages
		delete(ts.h.stash, ts.replica(args[0]))
	case "reset-sent":
		clear(ts.h.sent)
	case "expect":
		ts.cmdExpect(args)
	default:
		ts.failf("unknown command %q", cmd)
	}
}

func (ts *transcript) cmdReplicas(args []string) {
	n := int(ts.num(args[0]))
	opts := ts.kv(args[1:])
	ts.h = newHarness(n, func(c *Config) {
		for k, v := range opts {
			x := uint32(ts.num(v))
			switch k {
			case "depth":
				c.PrepareQueueDepth = x
			case "slots":
				c.JournalSlots = x
			case "clients":
				c.ClientTableMax = x
			case "quorum":
				c.TestingReplicationQuorum = uint8(x)
			case "chunk":
				c.RepairChunkMax = x
			case "debounce":
				c.RepairGapDebounceTicks = x
			case "probes":
				c.ViewProbeAttemptsMax = x
			default:
				ts.failf("unknown replicas option %q", k)
			}
		}
	}, ts.failf)
}

func (ts *transcript) cmdPropose(args []string) {
	i := ts.replica(args[0])
	opts := ts.kv(args[1:])
	req := Request{Body: []byte("body")}
	name := opts["as"]
	for k, v := range opts {
		switch k {
		case "as":
		case "client":
			req.Client = Uint128{Lo: ts.num(v)}
		case "session":
			if strings.HasPrefix(v, "@") {
				rep, ok := ts.h.replies[ts.tags[v[1:]]]
				if !ok {
					ts.failf("no reply %q for session", v[1:])
				}
				req.Session = rep.Op
			} else {
				req.Session = ts.num(v)
			}
		case "req":
			req.Request = ts.num(v)
		case "sum":
			req.Checksum = ts.num(v)
		case "body":
			req.Body = []byte(v)
		case "op":
			switch v {
			case "register":
				req.Operation = OperationRegister
			case "logout":
				req.Operation = OperationLogout
			case "data":
				req.Operation = 128
			default:
				ts.failf("unknown op %q", v)
			}
		default:
			ts.failf("unknown propose option %q", k)
		}
	}
	if req.Operation == 0 {
		req.Operation = 128
	}
	tag := ts.h.propose(i, req)
	if name != "" {
		ts.tags[name] = tag
	}
}

func (ts *transcript) cmdLinks(drop bool, args []string) {
	if len(args) == 0 || args[0] == "all" {
		if drop {
			ts.failf("drop needs a link")
		}
		clear(ts.h.dropped)
		clear(ts.h.droppedKinds)
		return
	}
	var kind MessageKind
	if last := args[len(args)-1]; strings.HasPrefix(last, "kind=") {
		k, ok := kindNames[strings.TrimPrefix(last, "kind=")]
		if !ok {
			ts.failf("unknown message kind in %q", last)
		}
		kind, args = k, args[:len(args)-1]
	}
	for _, a := range args {
		both := strings.Contains(a, "<->")
		sep := "->"
		if both {
			sep = "<->"
		}
		l, r, ok := strings.Cut(a, sep)
		if !ok {
			ts.failf("bad link %q", a)
		}
		x, y := uint8(ts.replica(l)), uint8(ts.replica(r))
		set := func(k [2]uint8) {
			switch {
			case kind != 0 && drop:
				ts.h.droppedKinds[dropKey{k[0], k[1], kind}] = true
			case kind != 0:
				delete(ts.h.droppedKinds, dropKey{k[0], k[1], kind})
			case drop:
				ts.h.dropped[k] = true
			default:
				delete(ts.h.dropped, k)
			}
		}
		set([2]uint8{x, y})
		if both {
			set([2]uint8{y, x})
		}
	}
}
