package integration

import (
	"context"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// testCtx bounds one test's client calls.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dialClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(testCtx(t), addr, client.WithResponseTimeout(15*time.Second))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// loginAs dials and logs in.
func loginAs(t *testing.T, addr, username, password string) *client.Client {
	t.Helper()
	c := dialClient(t, addr)
	if _, err := c.LoginUser(testCtx(t), username, password); err != nil {
		t.Fatalf("login %s: %v", username, err)
	}
	return c
}

func rootClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	return loginAs(t, addr, "iggy", "iggy")
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// expectCode checks that err carries the Iggy error code want.
func expectCode(t *testing.T, err error, want wire.ErrorCode) {
	t.Helper()
	if got := client.CodeOf(err); got != want {
		t.Fatalf("error %v: code %s, want %s", err, got, want)
	}
}

func id(n uint32) wire.Identifier    { return wire.NumericID(n) }
func named(s string) wire.Identifier { return wire.NamedID(s) }
func ptr[T any](v T) *T              { return &v }

// keepAlive pings c every `every` from a background goroutine, the way an SDK's
// heartbeat does, so c stays live however long the test's own steps take
// (other clients' logins under -race can stall the test for longer than a
// short heartbeat window). It stops at test cleanup, before c is closed; a
// failed ping fails the test.
func keepAlive(t *testing.T, c *client.Client, every time.Duration) {
	t.Helper()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			err := c.Ping(ctx)
			cancel()
			if err != nil {
				t.Errorf("keep-alive ping: %v", err)
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}
