//go:build !unix

package partitions

// OpenFilesLimit is unknown off Unix.
func OpenFilesLimit() (uint64, bool) { return 0, false }
