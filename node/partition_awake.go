package node

// awakeList is a shard's ticking groups (all but the resting ones): a
// dense slice, so the 10 ms tick walks memory in order instead of a map's
// buckets, with each entry's index kept in the entry for O(1) removal.
// With 10,000 groups awake (every one after a failover) the tick's own
// overhead is what decides how soon their view changes finish.
type awakeList struct {
	list []*partitionEntry
}

// add puts e in the list (no-op when it is there). An entry starts with
// awakeAt 0 (the zero value), so membership is checked by identity.
func (a *awakeList) add(e *partitionEntry) {
	if a.has(e) {
		return
	}
	e.awakeAt = len(a.list)
	a.list = append(a.list, e)
}

// remove takes e out, moving the last entry into its place.
func (a *awakeList) remove(e *partitionEntry) {
	if !a.has(e) {
		return
	}
	i, last := e.awakeAt, len(a.list)-1
	a.list[i] = a.list[last]
	a.list[i].awakeAt = i
	a.list[last] = nil
	a.list = a.list[:last]
	e.awakeAt = -1
}

func (a *awakeList) has(e *partitionEntry) bool {
	return e.awakeAt >= 0 && e.awakeAt < len(a.list) && a.list[e.awakeAt] == e
}
