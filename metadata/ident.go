package metadata

import (
	"fmt"
	"strconv"
)

// Ident names an entity by numeric id or by name, like the wire protocol's
// Identifier. Commands carry Idents and Apply resolves them against the
// state at apply time, so every replica resolves them identically.
type Ident struct {
	ID     uint32
	Name   string
	IsName bool
}

// ByID returns a numeric identifier.
func ByID(id uint32) Ident { return Ident{ID: id} }

// ByName returns a name identifier.
func ByName(name string) Ident { return Ident{Name: name, IsName: true} }

// String renders the identifier for logs and errors.
func (i Ident) String() string {
	if i.IsName {
		return strconv.Quote(i.Name)
	}
	return strconv.FormatUint(uint64(i.ID), 10)
}

func (i Ident) validate() error {
	if i.IsName {
		if len(i.Name) == 0 || len(i.Name) > NameBytesMax {
			return fmt.Errorf("identifier name length %d outside 1..%d", len(i.Name), NameBytesMax)
		}
		return nil
	}
	if i.Name != "" {
		return fmt.Errorf("numeric identifier %d carries a name", i.ID)
	}
	return nil
}
