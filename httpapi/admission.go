package httpapi

import (
	"net/http"
	"sync"
)

// Awaited partition writes (produce, offset store/delete) are bounded per
// credential and per node, as upstream's (spec §8.1): a client cannot
// park unbounded goroutines on partition groups.
const (
	writesPerCredentialMax = 32
	writesPerNodeMax       = 128
)

type admission struct {
	mu    sync.Mutex
	total int
	per   map[string]int
}

func newAdmission() *admission { return &admission{per: make(map[string]int)} }

// admit takes a slot for key, or answers 429/503 and reports false.
func (a *admission) admit(w http.ResponseWriter, key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.per[key] >= writesPerCredentialMax:
		writeHTTPError(w, http.StatusTooManyRequests, "too_many_in_flight_writes", "Too many in-flight writes for this session")
		return false
	case a.total >= writesPerNodeMax:
		writeHTTPError(w, http.StatusServiceUnavailable, "server_busy", "Server busy")
		return false
	}
	a.per[key]++
	a.total++
	return true
}

func (a *admission) release(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total--
	if a.per[key]--; a.per[key] <= 0 {
		delete(a.per, key)
	}
}
