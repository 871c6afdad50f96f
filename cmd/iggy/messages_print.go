package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lodestream/lodestream/wire"
)

type messageJSON struct {
	Offset          uint64       `json:"offset"`
	Timestamp       uint64       `json:"timestamp"`
	OriginTimestamp uint64       `json:"origin_timestamp"`
	ID              string       `json:"id"`
	PartitionID     uint32       `json:"partition_id"`
	Length          int          `json:"length"`
	Payload         string       `json:"payload"`
	PayloadBase64   string       `json:"payload_base64"`
	Headers         []headerJSON `json:"headers,omitempty"` // with -s/--show-headers
}

type headerJSON struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

// payloadText renders a payload as text, or as 0x-hex when it is not UTF-8.
func payloadText(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	return "0x" + hex.EncodeToString(p)
}

func toMessageJSON(partition uint32, m *wire.PolledMessage) messageJSON {
	return messageJSON{Offset: m.Offset, Timestamp: m.Timestamp, OriginTimestamp: m.OriginTimestamp,
		ID: hex.EncodeToString(m.ID[:]), PartitionID: partition, Length: len(m.Payload),
		Payload: payloadText(m.Payload), PayloadBase64: base64.StdEncoding.EncodeToString(m.Payload)}
}

var messageHeaders = []string{"Offset", "Timestamp", "ID", "Length", "Payload"}

func messageRow(j messageJSON) []string {
	return []string{u64s(j.Offset), formatMicros(j.Timestamp), j.ID, fmt.Sprint(j.Length), j.Payload}
}

// decodeHeaders renders a message's user headers; a block that does not decode is shown raw.
func decodeHeaders(block []byte) []headerJSON {
	if len(block) == 0 {
		return nil
	}
	pairs, err := wire.DecodeUserHeaders(block)
	if err != nil {
		return []headerJSON{{Key: "(undecodable)", Kind: "raw", Value: "0x" + hex.EncodeToString(block)}}
	}
	out := make([]headerJSON, len(pairs))
	for i, p := range pairs {
		out[i] = headerJSON{Key: payloadText(p.Key), Kind: p.ValueKind.String(), Value: formatHeaderValue(p.ValueKind, p.Value)}
	}
	return out
}

// pollPrinter writes poll results in one format across the polls of a --follow run.
type pollPrinter struct {
	a           *app
	format      string
	o           pollOptions
	headerShown bool
}

func (p *pollPrinter) print(reply *wire.PollMessagesReply) error {
	a := p.a
	if p.o.outputFile != "" {
		n, err := appendToMessageFile(p.o.outputFile, reply.Messages)
		if err != nil {
			return err
		}
		a.say("Stored %d message(s) of total size %s to %s binary file", len(reply.Messages), formatBytes(uint64(n)), p.o.outputFile)
		return nil
	}
	msgs := make([]messageJSON, len(reply.Messages))
	var columns []headerColumn
	seen := map[headerColumn]bool{}
	for i := range reply.Messages {
		msgs[i] = toMessageJSON(reply.PartitionID, &reply.Messages[i])
		if !p.o.showHeaders {
			continue
		}
		msgs[i].Headers = decodeHeaders(reply.Messages[i].UserHeaders)
		for _, h := range msgs[i].Headers {
			col := headerColumn{key: h.Key, kind: kindsByName[h.Kind]}
			if !seen[col] {
				seen[col] = true
				columns = append(columns, col)
			}
		}
	}
	sort.Slice(columns, func(i, j int) bool { return columns[i].title() < columns[j].title() })
	titles := append([]string(nil), messageHeaders...)
	for _, c := range columns {
		titles = append(titles, c.title())
	}
	var rows [][]string
	for _, m := range msgs {
		rows = append(rows, append(messageRow(m), headerCells(m.Headers, columns)...))
	}
	switch {
	case p.format == formatJSON:
		enc := json.NewEncoder(a.stdout)
		for _, m := range msgs {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
	case p.format == formatList:
		for _, r := range rows {
			fmt.Fprintln(a.stdout, strings.Join(r, "|"))
		}
	case !p.o.follow:
		if !a.globals.quiet {
			fmt.Fprintf(a.stdout, "Polled %d message(s) from partition %d, current offset %d\n",
				len(reply.Messages), reply.PartitionID, reply.CurrentOffset)
		}
		writeTable(a.stdout, titles, rows)
	default:
		// A table cannot grow: follow mode prints a header once, then "|"-separated rows.
		if !p.headerShown {
			fmt.Fprintln(a.stdout, strings.Join(titles, "|"))
			p.headerShown = true
		}
		for _, r := range rows {
			fmt.Fprintln(a.stdout, strings.Join(r, "|"))
		}
	}
	return nil
}

// headerCells lays out a message's headers under the batch's header columns.
func headerCells(hs []headerJSON, columns []headerColumn) []string {
	cells := make([]string, len(columns))
	for i, c := range columns {
		for _, h := range hs {
			if h.Key == c.key && kindsByName[h.Kind] == c.kind {
				cells[i] = h.Value
			}
		}
	}
	return cells
}
