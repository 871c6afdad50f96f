package vfs

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOSSeam compares, in one run, the calls the journal makes on a
// file directly on *os.File and through vfs.OS: the cost of the seam.
// TMPDIR=/dev/shm keeps the device out of it.
func BenchmarkOSSeam(b *testing.B) {
	buf := make([]byte, 4<<10)
	const span = 1 << 20
	open := func(b *testing.B) string { return filepath.Join(b.TempDir(), "f") }
	b.Run("WriteAt/os", func(b *testing.B) {
		f, err := os.OpenFile(open(b), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(int64(len(buf)))
		for i := 0; b.Loop(); i++ {
			if _, err := f.WriteAt(buf, int64(i*len(buf))%span); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteAt/vfs", func(b *testing.B) {
		f, err := OS.OpenFile(open(b), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(int64(len(buf)))
		for i := 0; b.Loop(); i++ {
			if _, err := f.WriteAt(buf, int64(i*len(buf))%span); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteDatasync/os", func(b *testing.B) {
		f, err := os.OpenFile(open(b), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for i := 0; b.Loop(); i++ {
			if _, err := f.WriteAt(buf[:512], int64(i*512)%span); err != nil {
				b.Fatal(err)
			}
			if err := datasync(f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteDatasync/vfs", func(b *testing.B) {
		f, err := OS.OpenFile(open(b), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for i := 0; b.Loop(); i++ {
			if _, err := f.WriteAt(buf[:512], int64(i*512)%span); err != nil {
				b.Fatal(err)
			}
			if err := f.Datasync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("OpenStatClose/os", func(b *testing.B) {
		name := open(b)
		os.WriteFile(name, buf, 0o644)
		for b.Loop() {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			f.Stat()
			f.Close()
		}
	})
	b.Run("OpenStatClose/vfs", func(b *testing.B) {
		name := open(b)
		os.WriteFile(name, buf, 0o644)
		for b.Loop() {
			f, err := OS.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			f.Stat()
			f.Close()
		}
	})
}
