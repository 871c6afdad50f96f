package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/lodestream/lodestream/wire"
)

// errorBody is the JSON error shape of spec §3.1.
type errorBody struct {
	ID     uint32  `json:"id"`
	Code   string  `json:"code"`
	Reason string  `json:"reason"`
	Field  *string `json:"field"`
}

// statusOf maps an Iggy error code to its HTTP status (spec §3.2).
func statusOf(code wire.ErrorCode) int {
	switch code {
	case wire.ErrStreamIDNotFound, wire.ErrTopicIDNotFound, wire.ErrPartitionNotFound, wire.ErrSegmentNotFound,
		wire.ErrClientNotFound, wire.ErrConsumerGroupIDNotFound, wire.ErrConsumerGroupNameNotFound,
		wire.ErrConsumerGroupMemberNotFound, wire.ErrConsumerOffsetNotFound, wire.ErrResourceNotFound:
		return http.StatusNotFound
	case wire.ErrUnauthenticated, wire.ErrAccessTokenMissing, wire.ErrInvalidAccessToken, wire.ErrInvalidPersonalAccessToken:
		return http.StatusUnauthorized
	case wire.ErrUnauthorized:
		return http.StatusForbidden
	case wire.ErrTransientNotCommitted, wire.ErrTransientNotAccepted, wire.ErrCannotEstablishConnection:
		return http.StatusServiceUnavailable
	case wire.ErrInvalidClientID:
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

// fieldOf is the request field an error is about (spec §3.1), for forms.
func fieldOf(code wire.ErrorCode) string {
	switch code {
	case wire.ErrStreamIDNotFound, wire.ErrInvalidStreamID:
		return "stream_id"
	case wire.ErrTopicIDNotFound, wire.ErrInvalidTopicID:
		return "topic_id"
	case wire.ErrPartitionNotFound:
		return "partition_id"
	case wire.ErrSegmentNotFound:
		return "segment_id"
	case wire.ErrClientNotFound:
		return "client_id"
	case wire.ErrInvalidStreamName, wire.ErrStreamNameAlreadyExists, wire.ErrInvalidTopicName, wire.ErrTopicNameAlreadyExists,
		wire.ErrConsumerGroupNameAlreadyExists, wire.ErrPersonalAccessTokenAlreadyExists:
		return "name"
	case wire.ErrInvalidOffset:
		return "offset"
	case wire.ErrInvalidConsumerGroupID:
		return "consumer_group_id"
	case wire.ErrUserAlreadyExists:
		return "username"
	}
	return ""
}

// snakeName is the upstream snake_case name of a code ("StreamIdNotFound"
// → "stream_id_not_found").
func snakeName(code wire.ErrorCode) string {
	name := code.Name()
	if name == "" {
		return "error"
	}
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// reasonOf is a human sentence for a code ("Stream id not found.").
func reasonOf(code wire.ErrorCode) string {
	words := strings.ReplaceAll(snakeName(code), "_", " ")
	if words == "" {
		return ""
	}
	return strings.ToUpper(words[:1]) + words[1:] + "."
}

// writeCode answers an Iggy error code with its status and JSON body.
func writeCode(w http.ResponseWriter, code wire.ErrorCode) {
	body := errorBody{ID: uint32(code), Code: snakeName(code), Reason: reasonOf(code)}
	if f := fieldOf(code); f != "" {
		body.Field = &f
	}
	writeError(w, statusOf(code), body)
}

// writeHTTPError answers an HTTP-layer error (spec §3.3): id is the status
// unless given.
func writeHTTPError(w http.ResponseWriter, status int, code, reason string) {
	writeError(w, status, errorBody{ID: uint32(status), Code: code, Reason: reason})
}

// writeNotFound is the generic 404 for reads of absent entities.
func writeNotFound(w http.ResponseWriter) {
	writeHTTPError(w, http.StatusNotFound, "not_found", "Resource not found")
}

func writeError(w http.ResponseWriter, status int, body errorBody) {
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, body)
}

// writePlain is a framework-class rejection (spec §3.4): plain text.
func writePlain(w http.ResponseWriter, status int, text string) {
	if status == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writePlain(w, http.StatusInternalServerError, "response encoding failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
