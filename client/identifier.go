package client

import (
	"fmt"
	"strconv"

	"github.com/lodestream/lodestream/wire"
)

// ParseIdentifier reads a stream, topic, group or user identifier the way the iggy CLI does: a
// number is a numeric ID, anything else a name (1..255 bytes).
func ParseIdentifier(s string) (wire.Identifier, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return wire.NumericID(uint32(n)), nil
	}
	id := wire.NamedID(s)
	if err := id.Validate(); err != nil {
		return wire.Identifier{}, fmt.Errorf("identifier %q is neither a number nor a name of 1..255 bytes: %w", s, err)
	}
	return id, nil
}
