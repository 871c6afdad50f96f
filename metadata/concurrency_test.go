package metadata

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrentReadsDuringApply: the read API may run on connection
// goroutines while the node applies commits (run with -race).
func TestConcurrentReadsDuringApply(t *testing.T) {
	s := seeded(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				for _, st := range s.Streams() {
					st.Name += "-mutated-copy" // views are copies
					s.Topics(ByID(st.ID))
				}
				s.Users()
				s.Authorize(1, PermPoll, 0, 0)
				s.ClientMemberships(ClientID{Lo: 1})
				s.VerifyPAT("raw1", uint64(i))
				s.Snapshot()
			}
		}()
	}
	r := rand.New(rand.NewPCG(3, 4))
	for op := uint64(1); op <= 500; op++ {
		user, cmd := randomCommand(r)
		s.Apply(ApplyContext{Op: op, Timestamp: op, UserID: user}, cmd)
	}
	close(stop)
	wg.Wait()
	if _, err := Restore(s.Snapshot()); err != nil {
		t.Fatal(err)
	}
}
