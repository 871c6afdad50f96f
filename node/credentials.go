package node

import "runtime"

// credentialWorkSlots bounds concurrent argon2 work (login verification,
// password hashing) server-wide: each run holds ~19 MiB and a whole core
// for ~30 ms, so at most half the cores (at least one) hash at once and the
// event loops, the partition shards and every other connection keep the
// rest. Logins beyond that wait their turn; a waiting connection that
// closes (login deadline) gives up its place.
func credentialWorkSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// credentialSlots is a counting semaphore of credentialWorkSlots slots.
type credentialSlots chan struct{}

func newCredentialSlots() credentialSlots { return make(credentialSlots, credentialWorkSlots()) }

// run executes fn in a slot, waiting for one; it reports false, without
// running fn, if cancel is closed first.
func (s credentialSlots) run(cancel <-chan struct{}, fn func()) bool {
	select {
	case s <- struct{}{}:
	case <-cancel:
		return false
	}
	defer func() { <-s }()
	fn()
	return true
}
