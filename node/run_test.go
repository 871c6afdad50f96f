package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/wire"
)

// startNode runs Run in-process on dir with an ephemeral loopback port and
// returns the bound address and a stop function that cancels and waits.
func startNode(t *testing.T, dir string) (string, func() error) {
	t.Helper()
	return startNodeOn(t, dir, nil)
}

// TestRunServesRecoversAndStops drives Run in-process (so -race watches the
// node's own goroutines): serve, shut down gracefully with a connection
// still open, boot again on the same data.
func TestRunServesRecoversAndStops(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startNode(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil { // the client connection is still open
		t.Fatalf("Run: %v", err)
	}
	if err := c.Ping(ctx); err == nil {
		t.Fatal("connection survived shutdown")
	}
	_ = c.Close()

	addr, stop = startNode(t, dir)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run after restart: %v", err)
		}
	}()
	c2, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	s, err := c2.GetStream(ctx, wire.NamedID("kept"))
	if err != nil || s.ID != 0 {
		t.Fatalf("stream after restart: %+v %v", s, err)
	}
}

func TestRunRefusesBadSetups(t *testing.T) {
	cfg, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.System.Path = t.TempDir()
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Enabled = false // the HTTP API is httpapi's (not linked into node tests)
	cfg.QUIC.Address, cfg.WebSocket.Address = "127.0.0.1:0", "127.0.0.1:0"
	if err := Run(context.Background(), Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), "root credentials") {
		t.Fatalf("first boot without root credentials: %v", err)
	}
	cfg.HTTP.Enabled = true
	if err := Run(context.Background(), Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy"}); err == nil ||
		!strings.Contains(err.Error(), "http.enabled") {
		t.Fatalf("http enabled: %v", err)
	}
	if err := Run(context.Background(), Options{}); err == nil {
		t.Fatal("nil config accepted")
	}
}
