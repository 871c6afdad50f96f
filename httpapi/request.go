package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/lodestream/lodestream/node"
	"github.com/lodestream/lodestream/wire"
)

// call is one request in flight: the writer, the request and, on
// protected routes, the authenticated caller.
type call struct {
	s *Server
	w http.ResponseWriter
	r *http.Request
	p node.Principal
	// body is the request body as read (readJSONBody), kept for a
	// partition write tried on another node.
	body []byte
}

// route kinds.
const (
	public    = false
	protected = true
)

// handle registers a route: on protected ones the bearer is checked first
// (spec §1: auth → path → query → body), so a bad bearer is 401 before any
// other error. name labels the route's metrics.
func (s *Server) handle(mux *http.ServeMux, pattern, name string, auth bool, h func(c *call)) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		if name != "ping" {
			rec.view = s.node.MetadataView
		}
		c := &call{s: s, w: rec, r: r}
		defer func() {
			if p := recover(); p != nil {
				// A bug in one handler: this request fails, the server
				// keeps serving.
				s.log.Error("BUG: panic while handling an HTTP request", "route", name, "panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					writePlain(rec, http.StatusInternalServerError, "internal error")
				}
			}
			if s.metrics != nil {
				s.metrics.observeHTTP(name, rec.statusCode(), rec.bytes, r.ContentLength, start)
			}
		}()
		if auth {
			p, ok := s.authenticate(rec, r)
			if !ok {
				return
			}
			c.p = p
			if c.routeCluster(name, h) {
				return
			}
		}
		h(c)
	})
}

// recorder remembers the status and counts the body bytes written.
// On success it stamps iggy-view, the metadata view (spec §1.2).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	view   func() (uint32, bool)
}

func (r *recorder) WriteHeader(status int) {
	if r.status != 0 {
		return // already sent
	}
	r.status = status
	if status < 400 && r.view != nil && r.Header().Get("iggy-view") == "" {
		if v, ok := r.view(); ok {
			r.Header().Set("iggy-view", strconv.FormatUint(uint64(v), 10))
		}
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// exec runs one command for the caller; on an error code it answers and
// reports false.
func (c *call) exec(code wire.CommandCode, body []byte) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(c.r.Context(), requestTimeout)
	defer cancel()
	reply, ec := c.s.node.Execute(ctx, c.p, code, body)
	if ec != wire.OK {
		writeCode(c.w, ec)
		return nil, false
	}
	return reply, true
}

// ident is a path identifier (spec §1): a u32 is a numeric id, anything
// else a name of 1..255 bytes.
func (c *call) ident(name string) (wire.Identifier, bool) {
	v := c.r.PathValue(name)
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return wire.NumericID(uint32(n)), true
	}
	if len(v) == 0 || len(v) > 255 {
		writeCode(c.w, wire.ErrInvalidIdentifier)
		return wire.Identifier{}, false
	}
	return wire.NamedID(v), true
}

// idents resolves several path identifiers in order.
func (c *call) idents(names ...string) ([]wire.Identifier, bool) {
	out := make([]wire.Identifier, len(names))
	for i, n := range names {
		id, ok := c.ident(n)
		if !ok {
			return nil, false
		}
		out[i] = id
	}
	return out, true
}

// pathU32 is a strict u32 path segment ({client_id}, {partition_id}):
// anything else is a framework 400.
func (c *call) pathU32(name string) (uint32, bool) {
	n, err := strconv.ParseUint(c.r.PathValue(name), 10, 32)
	if err != nil {
		writePlain(c.w, http.StatusBadRequest, "Invalid URL: Cannot parse `"+name+"` to a `u32`")
		return 0, false
	}
	return uint32(n), true
}

// query checks the query string: the consistency parameter where a route
// accepts it (a single node serves every read locally, so both values are
// the same read), and the route's own parameters via get.
type query struct {
	c   *call
	bad bool
}

func (c *call) query(consistency bool) *query {
	q := &query{c: c}
	if v, ok := c.r.URL.Query()["consistency"]; ok && consistency {
		if len(v) != 1 || (v[0] != "serializable" && v[0] != "linearizable") {
			q.fail("consistency", "unknown variant, expected `serializable` or `linearizable`")
		}
	}
	return q
}

func (q *query) fail(name, why string) {
	if !q.bad {
		q.bad = true
		writePlain(q.c.w, http.StatusBadRequest, "Failed to deserialize query string: "+name+": "+why)
	}
}

func (q *query) raw(name string) (string, bool) {
	vs, ok := q.c.r.URL.Query()[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

func (q *query) u64(name string, def uint64, required bool) uint64 {
	v, ok := q.raw(name)
	if !ok {
		if required {
			q.fail(name, "missing field `"+name+"`")
		}
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		q.fail(name, "invalid digit found in string")
		return def
	}
	return n
}

func (q *query) u32(name string, def uint32, required bool) uint32 {
	n := q.u64(name, uint64(def), required)
	if n > 1<<32-1 {
		q.fail(name, "number too large to fit in target type")
		return def
	}
	return uint32(n)
}

func (q *query) boolean(name string, def bool) bool {
	v, ok := q.raw(name)
	if !ok {
		return def
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	q.fail(name, "provided string was not `true` or `false`")
	return def
}

// decodeJSON reads the body into v (spec §3.4): a missing or wrong
// Content-Type is 415, oversize 413, a syntax error 400, a wrong shape
// 422. Unknown fields are ignored (the send body checks its top level).
func (c *call) decodeJSON(v any) bool {
	body, ok := c.readJSONBody()
	if !ok {
		return false
	}
	return decodeBody(c.w, body, v)
}

// decodeBody is decodeJSON's parsing half (fuzzed on its own).
func decodeBody(w http.ResponseWriter, body []byte, v any) bool {
	status, msg := parseJSON(body, v)
	if status != 0 {
		writePlain(w, status, msg)
		return false
	}
	return true
}

// parseJSON classifies a body: 0 when v was filled, else 400 (syntax) or
// 422 (shape, including validate errors of v).
func parseJSON(body []byte, v any) (int, string) {
	if !json.Valid(body) {
		return http.StatusBadRequest, "Failed to parse the request body as JSON"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type: " + err.Error()
	}
	if vv, ok := v.(interface{ validate() error }); ok {
		if err := vv.validate(); err != nil {
			return http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type: " + err.Error()
		}
	}
	return 0, ""
}
