package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"
)

// FaultEvent is one fault of the schedule, as it was applied.
type FaultEvent struct {
	At   time.Duration // since the nemesis started
	Kind string
	Desc string
	Hold time.Duration
}

func (e FaultEvent) String() string {
	return fmt.Sprintf("+%6.1fs %-14s hold %4.1fs  %s", e.At.Seconds(), e.Kind, e.Hold.Seconds(), e.Desc)
}

// Nemesis applies a seeded schedule of faults to a cluster: one fault (or
// one group of link faults) at a time, each held for a while and healed,
// then a quiet gap.
type Nemesis struct {
	c     *Cluster
	rng   *rand.Rand
	log   *slog.Logger
	hist  *History
	start time.Time

	weights []faultWeight

	mu     sync.Mutex
	events []FaultEvent
	counts map[string]int
}

type faultWeight struct {
	kind   string
	weight int
}

// Fault kinds and their weights.
var faultWeights = []faultWeight{
	{"kill", 4},
	{"pause", 3},
	{"restart-all", 1},          // SIGKILL every node: only with durability=persisted unless asked for
	{"restart-all-graceful", 1}, // SIGTERM every node
	{"drop", 3},
	{"delay", 2},
	{"cut-one-way", 3},
	{"isolate", 3},
	{"split", 2},
	{"sever", 2},
	{"kill+cut", 1},
}

// FaultKinds lists every fault kind.
func FaultKinds() []string {
	var out []string
	for _, w := range faultWeights {
		out = append(out, w.kind)
	}
	return out
}

// NewNemesis prepares the schedule of seed over the given fault kinds
// (their default weights).
func NewNemesis(c *Cluster, seed int64, kinds []string, hist *History, log *slog.Logger) *Nemesis {
	allowed := map[string]bool{}
	for _, k := range kinds {
		allowed[k] = true
	}
	n := &Nemesis{c: c, rng: rand.New(rand.NewSource(seed)), log: log, hist: hist, counts: map[string]int{}}
	for _, w := range faultWeights {
		if allowed[w.kind] {
			n.weights = append(n.weights, w)
		}
	}
	return n
}

// Events returns the faults applied so far.
func (n *Nemesis) Events() []FaultEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]FaultEvent(nil), n.events...)
}

// Counts returns how many faults of each kind ran.
func (n *Nemesis) Counts() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for k, v := range n.counts {
		out[k] = v
	}
	return out
}

// Total is the number of faults applied so far.
func (n *Nemesis) Total() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.events)
}

// CountsString is Counts as "kind=n ..." sorted by kind.
func (n *Nemesis) CountsString() string {
	c := n.Counts()
	var keys []string
	total := 0
	for k, v := range c {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "faults=%d", total)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, c[k])
	}
	return b.String()
}

func (n *Nemesis) record(kind, desc string, hold time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := FaultEvent{At: time.Since(n.start), Kind: kind, Desc: desc, Hold: hold}
	n.events = append(n.events, e)
	n.counts[kind]++
	n.log.Info("nemesis", "fault", kind, "desc", desc, "hold", hold)
}

func (n *Nemesis) pickKind() string {
	total := 0
	for _, w := range n.weights {
		total += w.weight
	}
	if total == 0 {
		return ""
	}
	r := n.rng.Intn(total)
	for _, w := range n.weights {
		if r < w.weight {
			return w.kind
		}
		r -= w.weight
	}
	return "kill"
}

func (n *Nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int63n(int64(hi-lo)+1))
}

// Run applies faults until ctx ends or for d, then heals everything.
func (n *Nemesis) Run(ctx context.Context, d time.Duration) {
	n.start = time.Now()
	until := n.start.Add(d)
	defer n.HealAll()
	for ctx.Err() == nil && time.Now().Before(until) {
		n.reviveCrashed()
		n.one(ctx, n.pickKind())
		sleepCtx(ctx, n.between(500*time.Millisecond, 3*time.Second))
	}
}

// minority is a random set of at most (N-1)/2 node ids (at least one).
func (n *Nemesis) minority() []int {
	k := 1 + n.rng.Intn((n.c.N-1)/2)
	return n.rng.Perm(n.c.N)[:k]
}

func (n *Nemesis) one(ctx context.Context, kind string) {
	c := n.c
	hold := n.between(time.Second, 6*time.Second)
	switch kind {
	case "kill":
		victims := n.minority()
		n.record(kind, fmt.Sprintf("SIGKILL nodes %v", victims), hold)
		for _, v := range victims {
			c.Nodes[v].Kill()
		}
		sleepCtx(ctx, hold)
		n.restart(victims)
	case "pause":
		victims := n.minority()
		n.record(kind, fmt.Sprintf("SIGSTOP nodes %v", victims), hold)
		for _, v := range victims {
			if err := c.Nodes[v].Pause(); err != nil {
				n.log.Warn("nemesis: pause", "node", v, "err", err)
			}
		}
		sleepCtx(ctx, hold)
		for _, v := range victims {
			_ = c.Nodes[v].Resume()
		}
	case "restart-all":
		hold = n.between(200*time.Millisecond, 2*time.Second)
		n.record(kind, "SIGKILL every node, then start them all", hold)
		var all []int
		for i := range c.Nodes {
			c.Nodes[i].Kill()
			all = append(all, i)
		}
		sleepCtx(ctx, hold)
		n.restart(all)
	case "restart-all-graceful":
		hold = n.between(200*time.Millisecond, 2*time.Second)
		n.record(kind, "SIGTERM every node, then start them all", hold)
		var all []int
		for i := range c.Nodes {
			if !c.Nodes[i].Stop() {
				n.hist.Violate("node %d did not exit cleanly within 30 s of SIGTERM (log %s)", i, c.Nodes[i].LogPath)
			}
			all = append(all, i)
		}
		sleepCtx(ctx, hold)
		n.restart(all)
	case "drop", "delay":
		var desc []string
		for a := 0; a < c.N; a++ {
			for b := a + 1; b < c.N; b++ {
				if n.rng.Intn(2) == 0 {
					continue
				}
				f := DirFault{Drop: 0.1 + 0.5*n.rng.Float64()}
				if kind == "delay" {
					f = DirFault{Delay: n.between(20*time.Millisecond, 250*time.Millisecond), Jitter: n.between(time.Millisecond, 50*time.Millisecond)}
				}
				switch n.rng.Intn(3) {
				case 0:
					c.Links.SetOneWay(a, b, f)
					desc = append(desc, fmt.Sprintf("%d->%d %s", a, b, f))
				case 1:
					c.Links.SetOneWay(b, a, f)
					desc = append(desc, fmt.Sprintf("%d->%d %s", b, a, f))
				default:
					c.Links.SetOneWay(a, b, f)
					c.Links.SetOneWay(b, a, f)
					desc = append(desc, fmt.Sprintf("%d<->%d %s", a, b, f))
				}
			}
		}
		if len(desc) == 0 {
			return
		}
		n.record(kind, strings.Join(desc, ", "), hold)
		sleepCtx(ctx, hold)
		c.Links.HealAll()
	case "cut-one-way":
		v := n.rng.Intn(c.N)
		out := n.rng.Intn(2) == 0
		for p := 0; p < c.N; p++ {
			if p == v {
				continue
			}
			if out {
				c.Links.SetOneWay(v, p, DirFault{Blackhole: true})
			} else {
				c.Links.SetOneWay(p, v, DirFault{Blackhole: true})
			}
		}
		dir := "incoming"
		if out {
			dir = "outgoing"
		}
		n.record(kind, fmt.Sprintf("node %d: every %s frame dropped", v, dir), hold)
		sleepCtx(ctx, hold)
		c.Links.HealAll()
	case "isolate":
		v := n.rng.Intn(c.N)
		for p := 0; p < c.N; p++ {
			if p != v {
				c.Links.SetOneWay(v, p, DirFault{Blackhole: true})
				c.Links.SetOneWay(p, v, DirFault{Blackhole: true})
			}
		}
		n.record(kind, fmt.Sprintf("node %d cut off both ways (frames dropped, connections up)", v), hold)
		sleepCtx(ctx, hold)
		c.Links.HealAll()
	case "split":
		side := n.minority()
		in := map[int]bool{}
		for _, v := range side {
			in[v] = true
		}
		for a := 0; a < c.N; a++ {
			for b := a + 1; b < c.N; b++ {
				if in[a] != in[b] {
					c.Links.SetOneWay(a, b, DirFault{Blackhole: true})
					c.Links.SetOneWay(b, a, DirFault{Blackhole: true})
				}
			}
		}
		n.record(kind, fmt.Sprintf("minority %v split from the rest", side), hold)
		sleepCtx(ctx, hold)
		c.Links.HealAll()
	case "sever":
		v := n.rng.Intn(c.N)
		for p := 0; p < c.N; p++ {
			if p != v {
				c.Links.Sever(v, p)
			}
		}
		n.record(kind, fmt.Sprintf("node %d: replica connections closed and refused", v), hold)
		sleepCtx(ctx, hold)
		c.Links.HealAll()
	case "kill+cut":
		victim := n.rng.Intn(c.N)
		other := (victim + 1 + n.rng.Intn(c.N-1)) % c.N
		n.record(kind, fmt.Sprintf("SIGKILL node %d and one-way cut %d->others", victim, other), hold)
		c.Nodes[victim].Kill()
		for p := 0; p < c.N; p++ {
			if p != other {
				c.Links.SetOneWay(other, p, DirFault{Blackhole: true})
			}
		}
		sleepCtx(ctx, hold)
		c.Links.HealAll()
		n.restart([]int{victim})
	}
}

// restart starts the given nodes concurrently; a node that cannot boot is
// a finding.
func (n *Nemesis) restart(ids []int) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.c.Nodes[id].Start(); err != nil {
				n.hist.Violate("restart: %v", err)
			}
		}()
	}
	wg.Wait()
}

// reviveCrashed starts the nodes that exited on their own (each exit is
// already a violation), so a long run keeps its cluster size.
func (n *Nemesis) reviveCrashed() {
	var dead []int
	for i, node := range n.c.Nodes {
		if !node.Running() {
			dead = append(dead, i)
		}
	}
	if len(dead) > 0 {
		n.log.Warn("nemesis: restarting nodes that exited on their own", "nodes", dead)
		n.restart(dead)
	}
}

// HealAll resumes paused nodes, starts stopped ones and clears every link.
func (n *Nemesis) HealAll() {
	n.c.Links.HealAll()
	var dead []int
	for i, node := range n.c.Nodes {
		_ = node.Resume()
		if !node.Running() {
			dead = append(dead, i)
		}
	}
	n.restart(dead)
}
