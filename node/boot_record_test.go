package node

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

func TestBootRecordRoundTripAndDamage(t *testing.T) {
	for _, r := range []bootRecord{{}, {bootID: "00000000-0000-0000-0000-000000000001"}, {bootID: "00000000-0000-0000-0000-000000000002", clean: true}} {
		got, err := decodeBootRecord(r.encode())
		if err != nil || got != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
		}
	}
	b := bootRecord{bootID: "00000000-0000-0000-0000-000000000001"}.encode()
	for name, bad := range map[string][]byte{
		"short":     b[:len(b)-1],
		"bit flip":  append(append([]byte(nil), b[:10]...), append([]byte{b[10] ^ 1}, b[11:]...)...),
		"empty":     nil,
		"all zeros": make([]byte, len(b)),
	} {
		if _, err := decodeBootRecord(bad); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

func TestAmnesiaAtBoot(t *testing.T) {
	const a, b = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	for _, c := range []struct {
		name    string
		prev    *bootRecord
		damage  error
		current string
		want    bool
	}{
		{"no record", nil, nil, a, true},
		{"damaged record", nil, os.ErrInvalid, a, true},
		{"clean stop, same boot", &bootRecord{bootID: a, clean: true}, nil, a, false},
		{"clean stop, then a reboot", &bootRecord{bootID: a, clean: true}, nil, b, false},
		{"process crash, same boot", &bootRecord{bootID: a}, nil, a, false},
		{"unclean stop, then a reboot", &bootRecord{bootID: a}, nil, b, true},
		{"unclean stop, boot id unknown now", &bootRecord{bootID: a}, nil, "", true},
		{"unclean stop, boot id unknown then", &bootRecord{}, nil, a, true},
	} {
		if got, reason := amnesiaAtBoot(c.prev, c.damage, c.current); got != c.want {
			t.Errorf("%s: amnesia %v (%s), want %v", c.name, got, reason, c.want)
		}
	}
}

// startBoot marks every partition directory when the last run's unsynced
// writes may be lost, never otherwise, and always leaves {this boot, not
// clean} behind; stoppedCleanly turns it clean.
func TestStartBootMarksPartitionsAfterAnUncleanReboot(t *testing.T) {
	mem := vfs.NewMem(1)
	setBootID := func(n int) {
		if err := mem.MkdirAll(filepath.Dir(vfs.BootIDPath), 0o755); err != nil {
			t.Fatal(err)
		}
		id := []byte("00000000-0000-0000-0000-00000000000" + string(rune('0'+n)) + "\n")
		if err := vfs.WriteFile(mem, vfs.BootIDPath, id, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	data := "/data"
	root := filepath.Join(data, "streams")
	parts := []string{
		filepath.Join(root, "1", "topics", "1", "partitions", "0"),
		filepath.Join(root, "1", "topics", "1", "partitions", "1"),
		filepath.Join(root, "2", "topics", "7", "partitions", "3"),
	}
	for _, d := range append(parts, filepath.Join(root, "1", "topics", "1", "partitions", "2"+vfs.RemovingSuffix)) {
		if err := mem.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	marked := func() (n int) {
		for _, d := range parts {
			if _, err := mem.Stat(filepath.Join(d, amnesiaMarkerFile)); err == nil {
				n++
			}
		}
		return n
	}
	unmark := func() {
		for _, d := range parts {
			_ = mem.Remove(filepath.Join(d, amnesiaMarkerFile))
		}
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	boot := func() *bootGuard {
		t.Helper()
		g, err := startBoot(mem, data, root, log)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	record := func() bootRecord {
		t.Helper()
		b, err := mem.ReadFile(filepath.Join(data, bootRecordFile))
		if err != nil {
			t.Fatal(err)
		}
		r, err := decodeBootRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	setBootID(1)
	boot() // no record yet (an older build's data): every partition is marked
	if got := marked(); got != len(parts) {
		t.Fatalf("no boot record: %d of %d partitions marked", got, len(parts))
	}
	if _, err := mem.Stat(filepath.Join(root, "1", "topics", "1", "partitions", "2"+vfs.RemovingSuffix, amnesiaMarkerFile)); err == nil {
		t.Fatal("a directory being removed was marked")
	}
	if r := record(); r.clean || !strings.HasSuffix(r.bootID, "1") {
		t.Fatalf("record after boot: %+v", r)
	}
	unmark()

	boot() // a process crash within the same boot
	if got := marked(); got != 0 {
		t.Fatalf("process restart in the same boot marked %d partitions", got)
	}

	setBootID(2) // power loss: rebooted with the record still unclean
	g := boot()
	if got := marked(); got != len(parts) {
		t.Fatalf("unclean stop then a reboot: %d of %d partitions marked", got, len(parts))
	}
	unmark()
	if err := g.stoppedCleanly(); err != nil {
		t.Fatal(err)
	}
	if r := record(); !r.clean || !strings.HasSuffix(r.bootID, "2") {
		t.Fatalf("record after a clean stop: %+v", r)
	}

	setBootID(3) // a reboot after a clean stop lost nothing
	boot()
	if got := marked(); got != 0 {
		t.Fatalf("clean stop then a reboot marked %d partitions", got)
	}

	if err := vfs.WriteFile(mem, filepath.Join(data, bootRecordFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	boot()
	if got := marked(); got != len(parts) {
		t.Fatalf("damaged record: %d of %d partitions marked", got, len(parts))
	}
	if !strings.Contains(logs.String(), "boot record is unreadable") {
		t.Fatalf("the damaged record was not named in the log:\n%s", logs.String())
	}
}
