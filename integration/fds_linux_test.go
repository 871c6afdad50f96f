//go:build linux

package integration

import (
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/lodestream/lodestream/wire"
)

// setOpenFilesLimit sets RLIMIT_NOFILE (soft and hard) of a running process.
func setOpenFilesLimit(t *testing.T, pid int, n uint64) {
	t.Helper()
	lim := syscall.Rlimit{Cur: n, Max: n}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE,
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		t.Fatalf("prlimit: %v", errno)
	}
}

// TestCreationFailsCleanlyWithoutFileDescriptors (issue 15 point 8): past
// the open-files limit CreateTopic used to answer OK while its partitions
// could not open. Now a creation whose partitions this node could not open
// is refused with 3000 before anything is committed; smaller ones still
// succeed and the server keeps serving.
func TestCreationFailsCleanlyWithoutFileDescriptors(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	setOpenFilesLimit(t, srv.cmd.Process.Pid, 150)

	_, err = c.CreateTopic(ctx, id(0), "big", 100)
	expectCode(t, err, wire.ErrCannotCreatePartition)
	topics, err := c.GetTopics(ctx, id(0))
	must(t, err)
	if len(topics) != 0 {
		t.Fatalf("the refused creation left %d topics", len(topics))
	}
	_, err = c.CreateTopic(ctx, id(0), "small", 5)
	must(t, err)
	sendOK(t, c, id(0), named("small"), partitionID(4), makeMessages("m", 0, 3))
	if !strings.Contains(srv.logs.String(), "partition creation refused") {
		t.Fatalf("no log line for the refusal:\n%s", srv.logs.String())
	}
}
