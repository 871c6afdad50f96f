package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// getStats: GET /stats.
func (c *call) getStats() {
	if c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetStats, nil)
	if !ok {
		return
	}
	st, err := wire.DecodeStats(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, statsOf(st))
}

// getClusterMetadata: GET /cluster/metadata (any user).
func (c *call) getClusterMetadata() {
	reply, ok := c.exec(wire.CodeGetClusterMetadata, nil)
	if !ok {
		return
	}
	m, err := wire.DecodeClusterMetadata(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, clusterOf(m))
}

// getClients: GET /clients (binary connections only).
func (c *call) getClients() {
	if c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetClients, nil)
	if !ok {
		return
	}
	cls, err := wire.DecodeClients(reply)
	if !c.decoded(err) {
		return
	}
	out := make([]clientJSON, 0, len(cls))
	for _, cl := range cls {
		out = append(out, clientOf(cl))
	}
	writeJSON(c.w, http.StatusOK, out)
}

// getClient: GET /clients/{client_id}.
func (c *call) getClient() {
	id, ok := c.pathU32("client_id")
	if !ok || c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetClient, wire.GetClientRequest{ClientID: id}.AppendBody(nil))
	if !ok {
		return
	}
	if len(reply) == 0 {
		writeNotFound(c.w)
		return
	}
	d, err := wire.DecodeClientDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, clientDetailsOf(d))
}

var snapshotCompressions = map[string]uint8{"Stored": 1, "Deflated": 2, "Bzip2": 3, "Zstd": 4, "Lzma": 5, "Xz": 6}

var snapshotTypes = map[string]uint8{"FilesystemOverview": 1, "ProcessList": 2, "ResourceUsage": 3, "Test": 4,
	"ServerLogs": 5, "ServerConfig": 6, "All": 100}

type snapshotRequest struct {
	Compression   *string  `json:"compression"`
	SnapshotTypes []string `json:"snapshot_types"`
}

func (r *snapshotRequest) validate() error {
	if r.Compression != nil {
		if _, ok := snapshotCompressions[*r.Compression]; !ok {
			return fmt.Errorf("unknown compression %q", *r.Compression)
		}
	}
	for _, t := range r.SnapshotTypes {
		if _, ok := snapshotTypes[t]; !ok {
			return fmt.Errorf("unknown snapshot type %q", t)
		}
	}
	return nil
}

// snapshot: POST /snapshot → a ZIP archive.
func (c *call) snapshot() {
	if c.query(true).bad {
		return
	}
	var req snapshotRequest
	if !c.decodeJSON(&req) {
		return
	}
	body := wire.GetSnapshotFileRequest{Compression: 2}
	if req.Compression != nil {
		body.Compression = snapshotCompressions[*req.Compression]
	}
	types := req.SnapshotTypes
	if len(types) == 0 {
		types = []string{"All"}
	}
	for _, t := range types {
		body.Types = append(body.Types, snapshotTypes[t])
	}
	reply, ok := c.exec(wire.CodeGetSnapshotFile, body.AppendBody(nil))
	if !ok {
		return
	}
	c.w.Header().Set("Content-Type", "application/zip")
	c.w.Header().Set("Content-Disposition",
		fmt.Sprintf("attachment; filename=\"iggy_snapshot_%s.zip\"", time.Now().Format("20060102_150405")))
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(reply)
}

var optionScopes = map[string]wire.DescribeScope{"topic": wire.ScopeTopic, "stream": wire.ScopeStream, "user": wire.ScopeUser}

// describeOptions: GET /options/{scope}.
func (c *call) describeOptions() {
	scope, ok := optionScopes[c.r.PathValue("scope")]
	if !ok {
		writeCode(c.w, wire.ErrInvalidCommand)
		return
	}
	reply, ok := c.exec(wire.CodeDescribeOptions, wire.DescribeOptionsRequest{Scope: scope}.AppendBody(nil))
	if !ok {
		return
	}
	specs, err := wire.DecodeOptionSpecs(reply)
	if !c.decoded(err) {
		return
	}
	out := make([]optionSpecJSON, 0, len(specs))
	for _, s := range specs {
		out = append(out, optionSpecOf(s))
	}
	writeJSON(c.w, http.StatusOK, out)
}

// decoded checks that a reply of our own node decoded; a failure is a bug
// (answered 500, logged).
func (c *call) decoded(err error) bool {
	if err == nil {
		return true
	}
	c.s.log.Error("BUG: node reply does not decode", "path", c.r.URL.Path, "err", err)
	writePlain(c.w, http.StatusInternalServerError, "internal error")
	return false
}
