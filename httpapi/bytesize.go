package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"
)

// byteSize is a byte count rendered as upstream's byte-unit "exact unit"
// string (spec §1): the largest unit, binary or decimal, in which the
// value is exact within three decimals, e.g. "147412 KiB", "69.092 KB",
// "0 B".
type byteSize uint64

var byteUnits = []struct {
	name string
	size uint64
}{
	{"EiB", 1 << 60}, {"EB", 1e18}, {"PiB", 1 << 50}, {"PB", 1e15}, {"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3},
}

func (b byteSize) String() string {
	v := uint64(b)
	for _, u := range byteUnits {
		if v < u.size {
			continue
		}
		whole, rest := v/u.size, v%u.size
		// rest/size must be a multiple of 1/1000: rest*1000 divisible by size.
		if rest == 0 {
			return strconv.FormatUint(whole, 10) + " " + u.name
		}
		if rest > ^uint64(0)/1000 || (rest*1000)%u.size != 0 {
			continue
		}
		frac := strconv.FormatUint(rest*1000/u.size, 10)
		frac = strings.Repeat("0", 3-len(frac)) + frac
		return strconv.FormatUint(whole, 10) + "." + strings.TrimRight(frac, "0") + " " + u.name
	}
	return strconv.FormatUint(v, 10) + " B"
}

func (b byteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }
