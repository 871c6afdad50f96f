package node

// credentialWorkMax bounds concurrent argon2 work (login verification,
// password hashing): each run holds ~19 MiB and a core for tens of
// milliseconds, so a burst of logins must queue instead of exhausting
// memory. Waiting connections simply wait their turn.
const credentialWorkMax = 4

// credentialSlots is a counting semaphore of credentialWorkMax slots.
type credentialSlots chan struct{}

func newCredentialSlots() credentialSlots { return make(credentialSlots, credentialWorkMax) }

// run executes fn in a slot.
func (s credentialSlots) run(fn func()) {
	s <- struct{}{}
	defer func() { <-s }()
	fn()
}
