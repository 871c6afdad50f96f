package httpapi

import (
	"net/http"
	"strings"
)

// routes builds the handler tree: request counting outermost (every
// request, preflights too), then CORS (answers preflights itself), the
// body limit, and the route table of spec §4.
func (s *Server) routes() (http.Handler, error) {
	mux := http.NewServeMux()
	h := func(pattern, name string, auth bool, fn func(*call)) { s.handle(mux, pattern, name, auth, fn) }

	h("GET /ping", "ping", public, func(c *call) { writeText(c.w, "pong") })
	h("POST /users/login", "login_user", public, (*call).login)
	h("POST /users/refresh-token", "refresh_token", public, (*call).refreshToken)
	h("POST /personal-access-tokens/login", "login_with_personal_access_token", public, (*call).patLogin)
	h("DELETE /users/logout", "logout_user", protected, (*call).logout)

	h("GET /stats", "get_stats", protected, (*call).getStats)
	h("GET /cluster/metadata", "get_cluster_metadata", protected, (*call).getClusterMetadata)
	h("GET /clients", "get_clients", protected, (*call).getClients)
	h("GET /clients/{client_id}", "get_client", protected, (*call).getClient)
	h("POST /snapshot", "get_snapshot", protected, (*call).snapshot)
	h("GET /options/{scope}", "describe_options", protected, (*call).describeOptions)

	h("GET /users", "get_users", protected, (*call).getUsers)
	h("POST /users", "create_user", protected, (*call).createUser)
	h("GET /users/{user_id}", "get_user", protected, (*call).getUser)
	h("PUT /users/{user_id}", "update_user", protected, (*call).updateUser)
	h("DELETE /users/{user_id}", "delete_user", protected, (*call).deleteUser)
	h("PUT /users/{user_id}/password", "change_password", protected, (*call).changePassword)
	h("PUT /users/{user_id}/permissions", "update_permissions", protected, (*call).updatePermissions)
	h("GET /personal-access-tokens", "get_personal_access_tokens", protected, (*call).getPATs)
	h("POST /personal-access-tokens", "create_personal_access_token", protected, (*call).createPAT)
	h("DELETE /personal-access-tokens/{name}", "delete_personal_access_token", protected, (*call).deletePAT)

	h("GET /streams", "get_streams", protected, (*call).getStreams)
	h("POST /streams", "create_stream", protected, (*call).createStream)
	h("GET /streams/{stream_id}", "get_stream", protected, (*call).getStream)
	h("PUT /streams/{stream_id}", "update_stream", protected, (*call).updateStream)
	h("DELETE /streams/{stream_id}", "delete_stream", protected, (*call).deleteStream)
	h("DELETE /streams/{stream_id}/purge", "purge_stream", protected, (*call).purgeStream)

	h("GET /streams/{stream_id}/topics", "get_topics", protected, (*call).getTopics)
	h("POST /streams/{stream_id}/topics", "create_topic", protected, (*call).createTopic)
	h("GET /streams/{stream_id}/topics/{topic_id}", "get_topic", protected, (*call).getTopic)
	h("PUT /streams/{stream_id}/topics/{topic_id}", "update_topic", protected, (*call).updateTopic)
	h("DELETE /streams/{stream_id}/topics/{topic_id}", "delete_topic", protected, (*call).deleteTopic)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/purge", "purge_topic", protected, (*call).purgeTopic)

	h("POST /streams/{stream_id}/topics/{topic_id}/partitions", "create_partitions", protected, (*call).createPartitions)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/partitions", "delete_partitions", protected, (*call).deletePartitions)
	h("DELETE /streams/{stream_id}/topics/{topic_id}/partitions/{partition_id}", "delete_segments", protected, (*call).deleteSegments)

	cg := "/streams/{stream_id}/topics/{topic_id}/consumer-groups"
	h("GET "+cg, "get_consumer_groups", protected, (*call).getGroups)
	h("POST "+cg, "create_consumer_group", protected, (*call).createGroup)
	h("GET "+cg+"/{group_id}", "get_consumer_group", protected, (*call).getGroup)
	h("DELETE "+cg+"/{group_id}", "delete_consumer_group", protected, (*call).deleteGroup)

	msgs := "/streams/{stream_id}/topics/{topic_id}/messages"
	h("GET "+msgs, "poll_messages", protected, (*call).pollMessages)
	h("POST "+msgs, "send_messages", protected, (*call).sendMessages)
	offsets := "/streams/{stream_id}/topics/{topic_id}/consumer-offsets"
	h("GET "+offsets, "get_consumer_offset", protected, (*call).getOffset)
	h("PUT "+offsets, "store_consumer_offset", protected, (*call).storeOffset)
	h("DELETE "+offsets+"/{consumer_id}", "delete_consumer_offset", protected, (*call).deleteOffset)

	if m := s.cfg.HTTP.Metrics; m.Enabled {
		if !strings.HasPrefix(m.Endpoint, "/") {
			return nil, errorf("http.metrics.endpoint = %q: must start with /", m.Endpoint)
		}
		h("GET "+m.Endpoint, "metrics", protected, (*call).metricsText)
	}
	if s.cfg.HTTP.WebUI {
		ui, err := s.webUI()
		if err != nil {
			return nil, err
		}
		mux.Handle("GET /ui", ui)
		mux.Handle("GET /ui/{path...}", ui)
	}

	cors, err := newCORS(s.cfg.HTTP.CORS)
	if err != nil {
		return nil, err
	}
	var root http.Handler = s.limitBody(emptyNotFound(mux))
	if cors != nil {
		root = cors.wrap(root)
	}
	if s.metrics != nil {
		root = s.metrics.countRequests(root)
	}
	return root, nil
}

// emptyNotFound answers an unknown path with an empty 404 (spec §3.4),
// where the mux would write a text body.
func emptyNotFound(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			mux.ServeHTTP(&bodiless{ResponseWriter: w}, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// bodiless drops the body of a 404.
type bodiless struct {
	http.ResponseWriter
	notFound bool
}

func (b *bodiless) WriteHeader(status int) {
	if status == http.StatusNotFound {
		b.notFound = true
		b.Header().Del("Content-Type")
		b.Header().Del("X-Content-Type-Options")
	}
	b.ResponseWriter.WriteHeader(status)
}

func (b *bodiless) Write(p []byte) (int, error) {
	if b.notFound {
		return len(p), nil
	}
	return b.ResponseWriter.Write(p)
}

// limitBody bounds every request body by http.max_request_size: a
// declared length above it is refused unread (413, Connection: close).
func (s *Server) limitBody(next http.Handler) http.Handler {
	limit := int64(s.cfg.HTTP.MaxRequestSize.Bytes())
	if limit <= 0 {
		limit = 2_000_000
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			writePlain(w, http.StatusRequestEntityTooLarge, "Failed to buffer the request body: length limit exceeded")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

func writeText(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(text))
}
