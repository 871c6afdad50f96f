package node

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/lodestream/lodestream/wire"
)

// GetSnapshotFile (code 11) answers a ZIP archive of diagnostics sections,
// one "<type>.txt" entry per requested type, as upstream does; the sections
// are gathered natively from /proc and the data directory rather than by
// running shell tools.
const (
	snapshotFilesystemOverview = 1
	snapshotProcessList        = 2
	snapshotResourceUsage      = 3
	snapshotTest               = 4
	snapshotServerLogs         = 5
	snapshotServerConfig       = 6
	snapshotAll                = 100

	compressionStored   = 1
	compressionDeflated = 2
	compressionXzMax    = 6 // 3 Bzip2, 4 Zstd, 5 Lzma, 6 Xz: written deflated (stdlib zip)

	diagnosticsFilesMax     = 10_000 // filesystem overview entries
	diagnosticsProcessesMax = 4096
)

var snapshotTypeNames = map[uint8]string{
	snapshotFilesystemOverview: "filesystem_overview",
	snapshotProcessList:        "process_list",
	snapshotResourceUsage:      "resource_usage",
	snapshotTest:               "test",
	snapshotServerLogs:         "server_logs",
	snapshotServerConfig:       "server_config",
}

// snapshotInProgress allows one diagnostics snapshot at a time.
var snapshotInProgress atomic.Bool

// diagnosticsSnapshot builds the archive or returns the status to answer.
func (n *Node) diagnosticsSnapshot(r wire.GetSnapshotFileRequest) ([]byte, wire.ErrorCode) {
	if r.Compression < compressionStored || r.Compression > compressionXzMax || len(r.Types) == 0 {
		return nil, wire.ErrInvalidCommand
	}
	types := make([]uint8, 0, len(r.Types))
	for _, t := range r.Types {
		if t == snapshotAll {
			if len(r.Types) != 1 {
				return nil, wire.ErrInvalidCommand
			}
			types = []uint8{snapshotFilesystemOverview, snapshotProcessList, snapshotResourceUsage, snapshotServerLogs, snapshotServerConfig}
			break
		}
		if _, ok := snapshotTypeNames[t]; !ok {
			return nil, wire.ErrInvalidCommand
		}
		types = append(types, t)
	}
	if !snapshotInProgress.CompareAndSwap(false, true) {
		return nil, wire.ErrSnapshotFileCompletionFailed
	}
	defer snapshotInProgress.Store(false)

	method := zip.Deflate
	if r.Compression == compressionStored {
		method = zip.Store
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, t := range types {
		content, ok := n.diagnosticsSection(t)
		if !ok {
			continue // a section that cannot be captured is skipped, as upstream does
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: snapshotTypeNames[t] + ".txt", Method: method})
		if err != nil {
			return nil, wire.ErrSnapshotFileCompletionFailed
		}
		if _, err := w.Write(content); err != nil {
			return nil, wire.ErrSnapshotFileCompletionFailed
		}
	}
	if err := zw.Close(); err != nil || buf.Len() > wire.FrameSizeMax-wire.HeaderSize {
		return nil, wire.ErrSnapshotFileCompletionFailed
	}
	return buf.Bytes(), wire.OK
}

func (n *Node) diagnosticsSection(t uint8) ([]byte, bool) {
	switch t {
	case snapshotFilesystemOverview:
		return filesystemOverview(n.dataDir), true
	case snapshotProcessList:
		return processList(), true
	case snapshotResourceUsage:
		st := n.stats()
		return []byte(fmt.Sprintf("%+v\n", st)), true
	case snapshotTest:
		return []byte("test\n"), true
	case snapshotServerConfig:
		return []byte(fmt.Sprintf("%+v\n", *n.cfg.Redacted())), true
	}
	// server_logs: this server logs to stderr only; there are no files to ship.
	return nil, false
}

// filesystemOverview lists the data directory: mode, size, path.
func filesystemOverview(root string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "data directory %s\n", root)
	count := 0
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "error %s: %v\n", path, err)
			return nil
		}
		if count++; count > diagnosticsFilesMax {
			fmt.Fprintf(&b, "... listing stopped after %d entries\n", diagnosticsFilesMax)
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %12d %s\n", info.Mode(), info.Size(), path)
		return nil
	})
	return []byte(b.String())
}

// processList lists the host's processes from /proc: pid, state, name.
func processList() []byte {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []byte(fmt.Sprintf("read /proc: %v\n", err))
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	var b strings.Builder
	b.WriteString("PID STATE NAME\n")
	for i, pid := range pids {
		if i == diagnosticsProcessesMax {
			fmt.Fprintf(&b, "... %d more\n", len(pids)-i)
			break
		}
		status := procKeyValuesText(fmt.Sprintf("/proc/%d/status", pid))
		fmt.Fprintf(&b, "%d %s %s\n", pid, status["State"], status["Name"])
	}
	return []byte(b.String())
}

// procKeyValuesText reads "key:\tvalue" lines as text.
func procKeyValuesText(path string) map[string]string {
	out := map[string]string{}
	raw, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
