package wire

import "fmt"

// Protocol version packing (§2.5): major<<20 | minor<<10 | patch, ten bits each.
const (
	versionFieldBits = 10
	versionFieldMask = 1<<versionFieldBits - 1
)

// ProtocolVersion is the packed version this codec speaks: 0.11.0 = 11264.
var ProtocolVersion = PackVersion(0, 11, 0)

// ProtocolVersionMin is the oldest packed version accepted: any 0.11.x.
var ProtocolVersionMin = ProtocolVersion &^ versionFieldMask

// PackVersion packs major.minor.patch; each field is truncated to 10 bits.
func PackVersion(major, minor, patch uint32) uint32 {
	return (major&versionFieldMask)<<(2*versionFieldBits) |
		(minor&versionFieldMask)<<versionFieldBits |
		patch&versionFieldMask
}

// UnpackVersion splits a packed version.
func UnpackVersion(v uint32) (major, minor, patch uint32) {
	return v >> (2 * versionFieldBits) & versionFieldMask, v >> versionFieldBits & versionFieldMask, v & versionFieldMask
}

// FormatVersion renders a packed version as "major.minor.patch".
func FormatVersion(v uint32) string {
	major, minor, patch := UnpackVersion(v)
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// VersionAccepted is the server's gate: client ≥ MIN and client's major.minor ≤ the server's.
func VersionAccepted(client uint32) bool {
	return client >= ProtocolVersionMin && client>>versionFieldBits <= ProtocolVersion>>versionFieldBits
}
