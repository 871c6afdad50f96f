//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/lodestream/lodestream/client"
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

// mountTmpfs mounts a tmpfs of sizeBytes at a new directory (root only; the
// test is skipped otherwise) and unmounts it at cleanup.
func mountTmpfs(t *testing.T, sizeBytes int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(sizeBytes)); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a filler file until the file system is full.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	must(t, err)
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	return path
}

// TestFullDiskFencesMetadataWritesAndServesReads (issue 15 point 8): a full
// disk under a metadata write used to stop the process. Now writes are
// refused with a retryable answer while reads are served, and writes resume
// once space returns, without a restart.
func TestFullDiskFencesMetadataWritesAndServesReads(t *testing.T) {
	disk := mountTmpfs(t, 8<<20)
	srv := startServer(t, filepath.Join(disk, "data"), "IGGY_SYSTEM_LOGGING_FILE_ENABLED=false")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "before")
	must(t, err)
	filler := fillDisk(t, disk)

	refused := false
	for i := 0; i < 2000 && !refused; i++ {
		_, err := c.CreateStream(ctx, fmt.Sprintf("s%d", i))
		if err != nil {
			if code := client.CodeOf(err); code != wire.ErrTransientNotAccepted && code != wire.ErrTransientNotCommitted {
				t.Fatalf("a write on a full disk answered %v, want a retryable code", err)
			}
			refused = true
		}
	}
	if !refused {
		t.Fatal("2000 writes on a full disk all succeeded")
	}
	if !srv.running() {
		t.Fatalf("the server stopped on a full disk:\n%s", srv.logs.String())
	}
	streams, err := c.GetStreams(ctx)
	must(t, err)
	if len(streams) == 0 {
		t.Fatal("reads are not served while writes are fenced")
	}
	must(t, os.Remove(filler))
	var last error
	for i := 0; i < 500; i++ { // the fence retries every second
		if _, last = c.CreateStream(ctx, "after"); last == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("writes did not resume once space returned: %v", last)
	}
	if !strings.Contains(srv.logs.String(), "writes are fenced") {
		t.Fatalf("no fence log line:\n%s", srv.logs.String())
	}
}
