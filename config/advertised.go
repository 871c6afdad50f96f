package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

const (
	hostnameBytesMax      = 253
	hostnameLabelBytesMax = 63
)

// AdvertisedHost is a parsed client-facing address: a literal IP or an
// RFC 1123 hostname (lower-cased).
type AdvertisedHost struct {
	IP       netip.Addr // valid when the address is an IP literal
	Hostname string     // set when the address is a hostname
}

// String renders the host without brackets.
func (h AdvertisedHost) String() string {
	if h.IP.IsValid() {
		return h.IP.String()
	}
	return h.Hostname
}

// Authority renders host:port, bracketing IPv6 literals.
func (h AdvertisedHost) Authority(port uint16) string {
	if h.IP.IsValid() {
		return netip.AddrPortFrom(h.IP, port).String()
	}
	return fmt.Sprintf("%s:%d", h.Hostname, port)
}

// ParseAdvertisedHost parses an advertised address strictly: a literal IPv4
// or IPv6 (brackets allowed) or an RFC 1123 hostname (≤ 253 bytes, labels of
// 1–63 letters, digits or hyphens with no edge hyphen, not all-numeric, no
// port, no trailing dot).
func ParseAdvertisedHost(address string) (AdvertisedHost, error) {
	if address == "" {
		return AdvertisedHost{}, errors.New("address cannot be empty")
	}
	if ip, err := netip.ParseAddr(address); err == nil {
		return AdvertisedHost{IP: ip}, nil
	}
	if inner, ok := strings.CutPrefix(address, "["); ok {
		if inner, ok := strings.CutSuffix(inner, "]"); ok {
			if ip, err := netip.ParseAddr(inner); err == nil && ip.Is6() {
				return AdvertisedHost{IP: ip}, nil
			}
		}
	}
	if host, port, found := cutLast(address, ":"); found {
		bracketed := strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")
		if port != "" && isDigits(port) && (bracketed || !strings.Contains(host, ":")) {
			return AdvertisedHost{}, errors.New("address must not include a port; ports come from cluster.nodes.ports")
		}
		return AdvertisedHost{}, errors.New("address contains ':' but is not a valid IPv6 address, and ':' cannot appear in a hostname")
	}
	if len(address) > hostnameBytesMax {
		return AdvertisedHost{}, fmt.Errorf("hostname is %d characters long; the limit is %d", len(address), hostnameBytesMax)
	}
	allNumeric := true
	for _, label := range strings.Split(address, ".") {
		if label == "" {
			return AdvertisedHost{}, errors.New("hostname contains an empty label (leading, trailing or doubled dot)")
		}
		if len(label) > hostnameLabelBytesMax {
			return AdvertisedHost{}, fmt.Errorf("hostname label %q exceeds %d characters", label, hostnameLabelBytesMax)
		}
		if strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return AdvertisedHost{}, fmt.Errorf("hostname label %q cannot start or end with a hyphen", label)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return AdvertisedHost{}, fmt.Errorf("character %q is not allowed in a hostname (allowed: ASCII letters, digits, '-', '.')", r)
			}
		}
		allNumeric = allNumeric && isDigits(label)
	}
	if allNumeric {
		return AdvertisedHost{}, errors.New("address consists only of digits and dots but is not a valid IPv4 address")
	}
	return AdvertisedHost{Hostname: strings.ToLower(address)}, nil
}

// ParseClientCIDR parses a selector network, truncates host bits and turns a
// v4-mapped IPv6 network of /96 or longer into its IPv4 form, so that
// "::ffff:10.0.0.0/104" and "10.0.0.0/8" are the same selector.
func ParseClientCIDR(cidr string) (netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(strings.TrimSpace(cidr))
	if err != nil {
		return netip.Prefix{}, err
	}
	prefix = prefix.Masked()
	if prefix.Addr().Is4In6() && prefix.Bits() >= 96 {
		return netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits()-96).Masked(), nil
	}
	return prefix, nil
}

// AdvertisedHostFor resolves the address a client at clientIP is told for
// this node: the longest matching advertised_addresses selector, else
// advertised_address, else the roster ip. An invalid clientIP skips the
// selectors. The configuration must have passed Validate.
func (n *NodeConfig) AdvertisedHostFor(clientIP netip.Addr) string {
	if clientIP.IsValid() {
		client := clientIP.Unmap()
		best := -1
		var chosen string
		for _, selector := range n.AdvertisedAddresses {
			prefix, err := ParseClientCIDR(selector.ClientCIDR)
			if err != nil || !prefix.Contains(client) || prefix.Bits() <= best {
				continue
			}
			host, err := ParseAdvertisedHost(selector.Address)
			if err != nil {
				continue
			}
			best, chosen = prefix.Bits(), host.String()
		}
		if best >= 0 {
			return chosen
		}
	}
	if n.AdvertisedAddress != "" {
		if host, err := ParseAdvertisedHost(n.AdvertisedAddress); err == nil {
			return host.String()
		}
		return n.AdvertisedAddress
	}
	return n.IP
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
