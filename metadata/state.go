// Package metadata is the deterministic metadata state machine: streams,
// topics, partitions, consumer groups, users, permissions and personal
// access tokens. Every change is a Command applied in op order by Apply;
// every input (ids, timestamps, hashes, the acting user) comes from the
// command or its ApplyContext, never from a clock, randomness or map order,
// so replicas applying the same log end in byte-identical snapshots.
//
// State is safe for concurrent use: Apply takes a write lock, the read API
// takes a read lock and returns deep copies.
package metadata

import (
	"slices"
	"sort"
	"sync"
)

// State is the metadata state machine.
type State struct {
	mu sync.RWMutex

	streams      map[uint32]*streamState
	streamByName map[string]uint32

	users      map[uint32]*userState
	userByName map[string]uint32
	patByHash  map[string]patRef // token hash → owner

	// sessions: which node registered each live session (cluster mode
	// logs out the sessions of a node that is gone); see sessions.go.
	sessions map[ClientID]sessionBinding

	// revision increments on every committed state change; partitions
	// record it as created_revision.
	revision uint64
	// Search hints for lowestFree (derived; reset to 0 on restore).
	streamIDHint, userIDHint int
	// lastOp / lastTimestamp are those of the latest applied command.
	lastOp        uint64
	lastTimestamp uint64
}

type streamState struct {
	id          uint32
	name        string
	createdAt   uint64
	topics      map[uint32]*topicState
	topicByName map[string]uint32
	topicIDHint int
}

type topicState struct {
	id              uint32
	name            string
	createdAt       uint64
	messageExpiry   uint64
	compression     Compression
	maxTopicSize    uint64
	options         TopicOptions
	explicitOptions OptionKey
	partitions      []Partition // index == partition id
	groups          map[uint32]*groupState
	groupByName     map[string]uint32
	nextGroupID     uint32
}

type groupState struct {
	id         uint32
	name       string
	generation uint64
	members    []Member // sorted by member id
}

type userState struct {
	id           uint32
	username     string
	passwordHash string
	status       UserStatus
	createdAt    uint64
	permissions  *Permissions
	pats         map[string]PersonalAccessToken
}

type patRef struct {
	userID uint32
	name   string
}

// NewState returns an empty state (no users). Seed the root user with
// SeedRoot before applying commands.
func NewState() *State {
	return &State{
		streams:      make(map[uint32]*streamState),
		streamByName: make(map[string]uint32),
		users:        make(map[uint32]*userState),
		userByName:   make(map[string]uint32),
		patByHash:    make(map[string]patRef),
	}
}

// Revision returns the state revision (bumped by every committed change).
func (s *State) Revision() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.revision
}

// LastApplied returns the op and timestamp of the latest applied command.
func (s *State) LastApplied() (op, timestampMicros uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lastOp, s.lastTimestamp
}

// lowestFree returns the lowest key in [*hint, limit) absent from used.
// hint is derived, not state: every key below it is in use, so the result
// is the lowest free key whatever the hint. Deletes lower it (lowerHint).
func lowestFree[V any](used map[uint32]V, limit int, hint *int) (uint32, bool) {
	for id := *hint; id < limit; id++ {
		if _, ok := used[uint32(id)]; !ok {
			*hint = id + 1
			return uint32(id), true
		}
	}
	*hint = limit
	return 0, false
}

func lowerHint(hint *int, freed uint32) {
	if int(freed) < *hint {
		*hint = int(freed)
	}
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedStringKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// resolveStream resolves an identifier; code is 0 or CodeStreamIDNotFound.
func (s *State) resolveStream(id Ident) (*streamState, uint32) {
	if id.IsName {
		if sid, ok := s.streamByName[id.Name]; ok {
			return s.streams[sid], CodeOK
		}
		return nil, CodeStreamIDNotFound
	}
	if st, ok := s.streams[id.ID]; ok {
		return st, CodeOK
	}
	return nil, CodeStreamIDNotFound
}

// resolveTopic resolves stream then topic; code 0, 1009 or 2010.
func (s *State) resolveTopic(streamID, topicID Ident) (*streamState, *topicState, uint32) {
	st, code := s.resolveStream(streamID)
	if code != CodeOK {
		return nil, nil, code
	}
	if topicID.IsName {
		if tid, ok := st.topicByName[topicID.Name]; ok {
			return st, st.topics[tid], CodeOK
		}
		return st, nil, CodeTopicIDNotFound
	}
	if t, ok := st.topics[topicID.ID]; ok {
		return st, t, CodeOK
	}
	return st, nil, CodeTopicIDNotFound
}

func (t *topicState) resolveGroup(id Ident) (*groupState, uint32) {
	if id.IsName {
		if gid, ok := t.groupByName[id.Name]; ok {
			return t.groups[gid], CodeOK
		}
		return nil, CodeGroupIDNotFound
	}
	if g, ok := t.groups[id.ID]; ok {
		return g, CodeOK
	}
	return nil, CodeGroupIDNotFound
}

func (s *State) resolveUser(id Ident) (*userState, uint32) {
	if id.IsName {
		if uid, ok := s.userByName[id.Name]; ok {
			return s.users[uid], CodeOK
		}
		return nil, CodeResourceNotFound
	}
	if u, ok := s.users[id.ID]; ok {
		return u, CodeOK
	}
	return nil, CodeResourceNotFound
}

// authorize reports whether userID may perform perm; root passes all,
// unknown and inactive users pass nothing.
func (s *State) authorize(userID uint32, perm Permission, streamID, topicID uint32) bool {
	u, ok := s.users[userID]
	if !ok {
		return false
	}
	if userID == RootUserID {
		return true
	}
	if u.status != UserActive {
		return false
	}
	return u.permissions.allows(perm, streamID, topicID)
}
