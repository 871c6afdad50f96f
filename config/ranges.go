package config

import (
	"net/netip"
	"sort"
)

// u128 is an unsigned 128-bit address value (IPv4 uses the low 32 bits).
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a u128) addOne() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return a, false // overflow: a was the maximum
}

func (a u128) subOne() u128 {
	if a.lo != 0 {
		return u128{a.hi, a.lo - 1}
	}
	return u128{a.hi - 1, ^uint64(0)}
}

// addrRange is an inclusive range of client addresses in one family.
type addrRange struct {
	v4          bool
	first, last u128
}

var (
	fullIPv4 = addrRange{v4: true, first: u128{}, last: u128{0, 0xFFFFFFFF}}
	fullIPv6 = addrRange{v4: false, first: u128{}, last: u128{^uint64(0), ^uint64(0)}}
)

func addrValue(addr netip.Addr) u128 {
	if addr.Is4() {
		b := addr.As4()
		return u128{0, uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])}
	}
	b := addr.As16()
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return u128{hi, lo}
}

// rangeOfPrefix is the inclusive address range a (masked) prefix covers.
func rangeOfPrefix(prefix netip.Prefix) addrRange {
	first := addrValue(prefix.Masked().Addr())
	width := 128
	if prefix.Addr().Is4() {
		width = 32
	}
	hostBits := width - prefix.Bits()
	var mask u128
	switch {
	case hostBits >= 128:
		mask = u128{^uint64(0), ^uint64(0)}
	case hostBits >= 64:
		mask = u128{(uint64(1) << (hostBits - 64)) - 1, ^uint64(0)}
	default:
		mask = u128{0, (uint64(1) << hostBits) - 1}
	}
	return addrRange{v4: prefix.Addr().Is4(), first: first, last: u128{first.hi | mask.hi, first.lo | mask.lo}}
}

// subtractNested removes from r every range nested inside it. CIDR ranges
// are nested or disjoint, so ranges outside r subtract nothing (a wider one
// loses the longest-prefix match to r's own selector).
func subtractNested(r addrRange, others []addrRange) []addrRange {
	var nested []addrRange
	for _, o := range others {
		if o.v4 == r.v4 && !o.first.less(r.first) && !r.last.less(o.last) {
			nested = append(nested, o)
		}
	}
	sort.Slice(nested, func(i, j int) bool { return nested[i].first.less(nested[j].first) })
	var remaining []addrRange
	cursor, open := r.first, true
	for _, n := range nested {
		if !open {
			break
		}
		if cursor.less(n.first) {
			remaining = append(remaining, addrRange{v4: r.v4, first: cursor, last: n.first.subOne()})
		}
		if next, ok := n.last.addOne(); ok {
			if cursor.less(next) {
				cursor = next
			}
		} else {
			open = false
		}
	}
	if open && !r.last.less(cursor) {
		remaining = append(remaining, addrRange{v4: r.v4, first: cursor, last: r.last})
	}
	return remaining
}

// catchAllClients is every client (both families) no selector matches.
func catchAllClients(selectors []addrRange) []addrRange {
	return append(subtractNested(fullIPv4, selectors), subtractNested(fullIPv6, selectors)...)
}
