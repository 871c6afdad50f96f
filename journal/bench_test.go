package journal

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// BenchmarkWALAppend: one ~200-byte metadata op per call, fdatasync each.
func BenchmarkWALAppend(b *testing.B) {
	w, _, err := OpenWAL(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	body := make([]byte, 200)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := consensus.Prepare{Header: consensus.PrepareHeader{Op: uint64(i + 1)}, Body: body}
		if err := w.Append(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSuperblockWrite(b *testing.B) {
	sb, _, err := OpenSuperblock(b.TempDir(), testIdentity)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := sb.Write(sbState(uint32(i+1), uint64(i))); err != nil {
			b.Fatal(err)
		}
	}
}
