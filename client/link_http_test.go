package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// fakeAPI is a REST API stand-in: it issues numbered tokens and records what it was asked.
type fakeAPI struct {
	mu       sync.Mutex
	issued   int
	valid    map[string]bool
	seen     []string // "METHOD path bearer"
	expiry   func() int64
	handlers map[string]func(w http.ResponseWriter, r *http.Request)
}

func newFakeAPI(t *testing.T) (*fakeAPI, string) {
	f := &fakeAPI{valid: map[string]bool{}, handlers: map[string]func(http.ResponseWriter, *http.Request){},
		expiry: func() int64 { return time.Now().Add(100 * time.Second).Unix() }}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeAPI) identity(w http.ResponseWriter) {
	f.issued++
	tok := fmt.Sprintf("t%d", f.issued)
	f.valid[tok] = true
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"user_id":7,"access_token":{"token":%q,"expiry":%d}}`, tok, f.expiry())
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.seen = append(f.seen, r.Method+" "+r.URL.Path+" "+bearer)
	body, _ := io.ReadAll(r.Body)
	switch r.URL.Path {
	case "/ping":
		io.WriteString(w, "pong")
		return
	case "/users/login":
		if !strings.Contains(string(body), `"password":"pw"`) {
			w.WriteHeader(400)
			io.WriteString(w, `{"id":42,"code":"invalid_credentials","reason":"x","field":null}`)
			return
		}
		f.identity(w)
		return
	case "/users/refresh-token":
		var req struct{ Token string }
		_ = json.Unmarshal(body, &req)
		if !f.valid[req.Token] {
			w.WriteHeader(401)
			io.WriteString(w, `{"id":40,"code":"unauthenticated","reason":"x","field":null}`)
			return
		}
		f.identity(w)
		return
	}
	if !f.valid[bearer] {
		w.WriteHeader(401)
		io.WriteString(w, `{"id":40,"code":"unauthenticated","reason":"x","field":null}`)
		return
	}
	if h, ok := f.handlers[r.Method+" "+r.URL.Path]; ok {
		h(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `[]`)
}

func (f *fakeAPI) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *fakeAPI) reset() {
	f.mu.Lock()
	f.seen = nil
	f.mu.Unlock()
}

func dialFake(t *testing.T, url string, opts ...Option) (*Client, *httpLink) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, append([]Option{WithTransport(TransportHTTP), WithNotAcceptedWindow(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.LoginUser(ctx, "u", "pw"); err != nil {
		t.Fatal(err)
	}
	return c, c.conn.(*httpLink)
}

// The bearer is refreshed when a quarter of its life is left, replaced by a new sign-in once it has
// expired, and a request refused with 401 is sent again once after a new sign-in.
func TestHTTPLinkKeepsItsBearerFresh(t *testing.T) {
	f, url := newFakeAPI(t)
	c, l := dialFake(t, url)
	ctx := context.Background()
	if c.UserID() != 7 || c.Session() == 0 {
		t.Fatalf("after sign-in: user %d, session %d", c.UserID(), c.Session())
	}
	f.reset()
	if _, err := c.GetStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(); len(got) != 1 || got[0] != "GET /streams t1" {
		t.Fatalf("fresh bearer: %q", got)
	}
	// 80 of 100 s gone: refreshed before the request.
	l.now = func() time.Time { return time.Now().Add(80 * time.Second) }
	f.reset()
	if _, err := c.GetStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(); len(got) != 2 || got[0] != "POST /users/refresh-token " || got[1] != "GET /streams t2" {
		t.Fatalf("refresh: %q", got)
	}
	// Past its expiry: signed in again.
	l.now = func() time.Time { return time.Now().Add(500 * time.Second) }
	f.reset()
	if _, err := c.GetStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(); len(got) != 2 || got[0] != "POST /users/login " || got[1] != "GET /streams t3" {
		t.Fatalf("re-login: %q", got)
	}
	// The server stops accepting the bearer: one new sign-in and one resend.
	l.now = time.Now
	f.mu.Lock()
	f.valid = map[string]bool{}
	f.mu.Unlock()
	f.reset()
	if _, err := c.GetStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(); len(got) != 3 || got[0] != "GET /streams t3" || got[1] != "POST /users/login " || got[2] != "GET /streams t4" {
		t.Fatalf("401 then re-login: %q", got)
	}
	// Logout forgets bearer and credentials: later calls are refused locally.
	if err := c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	f.reset()
	if _, err := c.GetStreams(ctx); CodeOf(err) != wire.ErrUnauthenticated || len(f.calls()) != 0 {
		t.Fatalf("after logout: %v, calls %q", err, f.calls())
	}
}

// Error bodies map to the binary protocol's codes; unknown outcomes are never replayed.
func TestHTTPLinkErrorMapping(t *testing.T) {
	f, url := newFakeAPI(t)
	answer := func(route string, status int, body string) {
		f.mu.Lock()
		f.handlers[route] = func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
		f.mu.Unlock()
	}
	ctx := context.Background()
	cases := []struct {
		status int
		body   string
		want   wire.ErrorCode
	}{
		{404, `{"id":404,"code":"not_found","reason":"Resource not found","field":null}`, wire.ErrStreamIDNotFound},
		{400, `{"id":1010,"code":"stream_name_not_found","reason":"x","field":"stream_id"}`, wire.ErrStreamNameNotFound},
		{403, `{"id":41,"code":"unauthorized","reason":"x","field":null}`, wire.ErrUnauthorized},
		{429, `{"id":429,"code":"too_many_in_flight_writes","reason":"x","field":null}`, wire.ErrTransientNotAccepted},
		{503, `{"id":503,"code":"server_busy","reason":"x","field":null}`, wire.ErrTransientNotAccepted},
		{503, `{"id":9,"code":"cannot_establish_connection","reason":"x","field":null}`, wire.ErrCannotEstablishConnection},
		{422, `Failed to deserialize the JSON body`, wire.ErrInvalidCommand},
		{500, `boom`, wire.ErrError},
	}
	for _, tc := range cases {
		c, _ := dialFake(t, url)
		answer("GET /streams/s", tc.status, tc.body)
		_, err := c.GetStream(ctx, wire.NamedID("s"))
		if CodeOf(err) != tc.want {
			t.Errorf("%d %s: %v, want %s", tc.status, tc.body, err, tc.want)
		}
	}
	// Unknown outcomes: reported as a deadline-caused transport failure, sent once.
	for _, tc := range []struct {
		route  string
		status int
		body   string
	}{
		{"POST /streams/s/topics/t/messages", 504, `{"id":504,"code":"produce_timeout","reason":"x","field":null}`},
		{"POST /streams", 503, `{"id":57,"code":"transient_not_committed","reason":"x","field":null}`},
		{"POST /streams", 502, `{"id":502,"code":"forward_failed","reason":"x","field":null}`},
	} {
		c, _ := dialFake(t, url)
		answer(tc.route, tc.status, tc.body)
		f.reset()
		var err error
		if strings.HasSuffix(tc.route, "messages") {
			_, err = c.SendMessages(ctx, wire.NamedID("s"), wire.NamedID("t"), wire.Partitioning{Kind: wire.PartitioningBalanced},
				[]wire.BatchMessageInput{{Payload: []byte("x")}})
		} else {
			_, err = c.CreateStream(ctx, "s")
		}
		if CodeOf(err) != wire.ErrDisconnected || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: %v, want Disconnected caused by a deadline", tc.body, err)
		}
		if n := len(f.calls()); n != 1 {
			t.Errorf("%s: sent %d times, want once", tc.body, n)
		}
	}
	// Commands without a REST route are refused locally.
	c, _ := dialFake(t, url)
	f.reset()
	if _, err := c.GetMe(ctx); CodeOf(err) != wire.ErrFeatureUnavailable || len(f.calls()) != 0 {
		t.Errorf("GetMe: %v, calls %q", err, f.calls())
	}
	if _, err := c.GetStream(ctx, wire.NamedID("123")); CodeOf(err) != wire.ErrFeatureUnavailable {
		t.Errorf("all-digit name: %v", err)
	}
}

func TestHTTPByteSizeStrings(t *testing.T) {
	for s, want := range map[string]uint64{"0 B": 0, "69.092 KB": 69092, "147412 KiB": 147412 * 1024, "1.5 KiB": 1536,
		"3 GB": 3e9, "1.001 MB": 1001000} {
		got, err := parseHTTPByteSize(s)
		if err != nil || got != want {
			t.Errorf("%q = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "12", "1.2345 KB", "x B", "1 XB"} {
		if _, err := parseHTTPByteSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
