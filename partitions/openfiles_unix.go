//go:build unix

package partitions

import "syscall"

// OpenFilesLimit is the process's soft RLIMIT_NOFILE (false when it cannot be read or is unlimited).
// A process limit, not file content: it stays a system call, outside Options.FS.
func OpenFilesLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 || r.Cur >= 1<<62 {
		return 0, false
	}
	return uint64(r.Cur), true
}
