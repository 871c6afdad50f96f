package vfs

// nameIndex is the set of names in each directory of a Mem namespace,
// keyed by the directory's path.
type nameIndex map[string]map[string]struct{}

func indexNames(ns map[string]*inode) nameIndex {
	x := nameIndex{}
	for k := range ns {
		x.add(k)
	}
	return x
}

// add notes name (the root is no directory's child).
func (x nameIndex) add(name string) {
	if name == "/" {
		return
	}
	dir := parentDir(name)
	set := x[dir]
	if set == nil {
		set = map[string]struct{}{}
		x[dir] = set
	}
	set[name] = struct{}{}
}

func (x nameIndex) remove(name string) {
	dir := parentDir(name)
	if set := x[dir]; set != nil {
		delete(set, name)
		if len(set) == 0 {
			delete(x, dir)
		}
	}
}

// move follows renameIn: from left ("" when nothing did), to came.
func (x nameIndex) move(from, to string) {
	if from != "" {
		x.remove(from)
	}
	x.add(to)
}
