package node

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMetadataStorageWorkOutTooLongIsWedged: the watchdog reports storage
// work out for the wedged timeout as wedged storage (exit status
// ExitStorageWedged) and stays quiet while none is under way or it is
// younger than the timeout.
func TestMetadataStorageWorkOutTooLongIsWedged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var began time.Time // none under way
	quiet := make(chan error, 1)
	go watchStorage(ctx, func() time.Time { return began }, time.Minute, time.Millisecond, quiet)
	young := make(chan error, 1)
	go watchStorage(ctx, func() time.Time { return time.Now().Add(-time.Second) }, time.Minute, time.Millisecond, young)
	hung := make(chan error, 1)
	go watchStorage(ctx, func() time.Time { return time.Now().Add(-2 * time.Minute) }, time.Minute, time.Millisecond, hung)
	select {
	case err := <-hung:
		var coded interface{ ExitCode() int }
		if !errors.As(err, &coded) || coded.ExitCode() != ExitStorageWedged || !errors.Is(err, errMetadataWriteNeverReturned) {
			t.Fatalf("hung metadata write reported as %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("storage work out for twice the timeout was not reported")
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-quiet:
		t.Fatalf("reported with no storage work under way: %v", err)
	case err := <-young:
		t.Fatalf("reported storage work younger than the timeout: %v", err)
	default:
	}
}
