package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
)

// Root credential env names and length rules (bytes).
const (
	RootUsernameEnv      = "IGGY_ROOT_USERNAME"
	RootPasswordEnv      = "IGGY_ROOT_PASSWORD"
	RootUsernameBytesMin = 3
	RootUsernameBytesMax = 50
	RootPasswordBytesMin = 3
	RootPasswordBytesMax = 100
	// DefaultRootUsername is the root user's name when none is supplied.
	DefaultRootUsername = "iggy"
	// MetadataDirName is the directory under system.path whose absence marks
	// a first boot (the root user does not exist yet).
	MetadataDirName = "metadata"
)

// BootInput is everything CheckBoot needs besides the configuration: the
// command-line replica id, the root credential variables and whether the
// data directory already holds metadata. It is plain data so the checks are
// pure and testable.
type BootInput struct {
	ReplicaID    uint8
	ReplicaIDSet bool
	// RootUsername / RootPassword are the IGGY_ROOT_* values; the *Set flags
	// say whether the variable was present at all.
	RootUsername    string
	RootUsernameSet bool
	RootPassword    string
	RootPasswordSet bool
	// MetadataExists is true when <system.path>/metadata exists.
	MetadataExists bool
	// UnservedTransports are transports this build cannot serve yet; enabling
	// one refuses boot (e.g. "quic", "http", "websocket").
	UnservedTransports []string
}

// BootPlan is what the node needs to start.
type BootPlan struct {
	// ReplicaID is this node's id (0 for a single node).
	ReplicaID uint8
	// Node is this node's roster entry; nil when the cluster is disabled.
	Node *NodeConfig
	// FirstBoot is true when no metadata exists yet: the root user is created.
	FirstBoot bool
	// RootUsername / RootPassword are the credentials for a root user created
	// on this boot (empty password with GenerateRootPassword set means the
	// caller must generate one and log it once).
	RootUsername         string
	RootPassword         string
	GenerateRootPassword bool
	// Warnings are non-fatal findings worth logging at boot.
	Warnings []Warning
}

// MetadataDirExists reports whether <systemPath>/metadata exists.
func MetadataDirExists(systemPath string) (bool, error) {
	_, err := os.Stat(filepath.Join(systemPath, MetadataDirName))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("checking %s: %w", filepath.Join(systemPath, MetadataDirName), err)
}

// CheckBoot runs the boot-time checks that depend on the command line and the
// environment (the configuration itself must already have passed Validate).
// All violations are returned joined.
func CheckBoot(cfg *Config, in BootInput) (BootPlan, error) {
	plan := BootPlan{FirstBoot: !in.MetadataExists}
	var problems []error
	fail := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }

	if cfg.Cluster.Enabled {
		switch {
		case !in.ReplicaIDSet:
			fail("cluster.enabled = true requires --replica-id to select this node's cluster.nodes entry")
		default:
			plan.Node = cfg.Cluster.NodeByReplicaID(in.ReplicaID)
			if plan.Node == nil {
				fail("--replica-id %d matches no cluster.nodes entry (roster replica ids: %s)", in.ReplicaID, rosterIDs(cfg))
			}
			plan.ReplicaID = in.ReplicaID
		}
	} else if in.ReplicaIDSet && in.ReplicaID != 0 {
		fail("--replica-id %d requires cluster.enabled = true (a single node is replica 0)", in.ReplicaID)
	}

	if cfg.System.Segment.ArchiveExpired {
		fail("system.segment.archive_expired = true is not supported by this server")
	}
	if cfg.System.Recovery.RecreateMissingState {
		fail("system.recovery.recreate_missing_state = true is not supported by this server")
	}
	for _, transport := range in.UnservedTransports {
		if transportEnabled(cfg, transport) {
			fail("%s.enabled = true: the %s transport is not served by this build yet; set %s.enabled = false", transport, transport, transport)
		}
	}

	checkRootCredentials(cfg, in, &plan, fail)

	if plan.Node != nil {
		plan.Warnings = append(plan.Warnings, bindWarnings(cfg, plan.Node)...)
	}
	if cfg.Cluster.Enabled && cfg.HTTP.Enabled && !HTTPForwardingKeyMaterial(cfg) {
		plan.Warnings = append(plan.Warnings, Warning{Message: "http is enabled in a cluster without http.jwt secrets or a cluster PSK: bearer tokens are node-local and HTTP forwarding to the primary is disabled"})
	}
	if len(problems) > 0 {
		return BootPlan{}, errors.Join(problems...)
	}
	return plan, nil
}

func checkRootCredentials(cfg *Config, in BootInput, plan *BootPlan, fail func(string, ...any)) {
	switch {
	case in.RootUsernameSet && !in.RootPasswordSet:
		fail("%s is set but %s is not: set both or neither", RootUsernameEnv, RootPasswordEnv)
		return
	case in.RootPasswordSet && !in.RootUsernameSet:
		fail("%s is set but %s is not: set both or neither", RootPasswordEnv, RootUsernameEnv)
		return
	case in.RootUsernameSet && in.RootPasswordSet:
		// Supplied values are validated on every boot, even when unused.
		if n := len(in.RootUsername); n < RootUsernameBytesMin || n > RootUsernameBytesMax {
			fail("%s is %d bytes: must be %d to %d bytes", RootUsernameEnv, n, RootUsernameBytesMin, RootUsernameBytesMax)
		}
		if n := len(in.RootPassword); n < RootPasswordBytesMin || n > RootPasswordBytesMax {
			fail("%s is %d bytes: must be %d to %d bytes", RootPasswordEnv, n, RootPasswordBytesMin, RootPasswordBytesMax)
		}
		if plan.FirstBoot {
			plan.RootUsername = in.RootUsername
			plan.RootPassword = in.RootPassword
		}
	default:
		if !plan.FirstBoot {
			return
		}
		if cfg.Cluster.Enabled {
			fail("first boot of a cluster replica (no %s/ under system.path %q) requires %s and %s, identical on every node",
				MetadataDirName, cfg.System.Path, RootUsernameEnv, RootPasswordEnv)
			return
		}
		plan.RootUsername = DefaultRootUsername
		plan.GenerateRootPassword = true
	}
}

func rosterIDs(cfg *Config) string {
	ids := ""
	for i, node := range cfg.Cluster.Nodes {
		if i > 0 {
			ids += ", "
		}
		ids += fmt.Sprint(node.ReplicaID)
	}
	if ids == "" {
		return "none"
	}
	return ids
}

func transportEnabled(cfg *Config, transport string) bool {
	switch transport {
	case TransportTCP:
		return cfg.TCP.Enabled
	case TransportQUIC:
		return cfg.QUIC.Enabled
	case TransportHTTP:
		return cfg.HTTP.Enabled
	case TransportWebSocket:
		return cfg.WebSocket.Enabled
	}
	return false
}

// HTTPForwardingKeyMaterial reports whether cluster-wide JWT key material
// exists (explicit http.jwt secrets, or a cluster PSK with auth enabled), the
// precondition for follower → primary HTTP forwarding.
func HTTPForwardingKeyMaterial(cfg *Config) bool {
	return cfg.Cluster.Enabled &&
		((cfg.Cluster.Auth.Enabled && cfg.Cluster.Auth.SharedSecret.IsSet()) ||
			cfg.HTTP.JWT.EncodingSecret.IsSet() || cfg.HTTP.JWT.DecodingSecret.IsSet())
}

// bindWarnings flags enabled client listeners whose bind host cannot accept
// connections addressed to this node's roster ip (e.g. the default loopback
// bind on a multi-host cluster): peers forward and clients fall back to ip.
func bindWarnings(cfg *Config, node *NodeConfig) []Warning {
	rosterIP, err := netip.ParseAddr(node.IP)
	if err != nil {
		return nil
	}
	var warnings []Warning
	for _, listener := range []struct {
		name    string
		enabled bool
		address string
	}{
		{TransportTCP, cfg.TCP.Enabled, cfg.TCP.Address}, {TransportQUIC, cfg.QUIC.Enabled, cfg.QUIC.Address},
		{TransportHTTP, cfg.HTTP.Enabled, cfg.HTTP.Address}, {TransportWebSocket, cfg.WebSocket.Enabled, cfg.WebSocket.Address},
	} {
		if !listener.enabled {
			continue
		}
		host, _, err := net.SplitHostPort(listener.address)
		if err != nil {
			continue
		}
		bind, err := netip.ParseAddr(host)
		if err != nil || bind.IsUnspecified() || bind.Unmap() == rosterIP.Unmap() {
			continue
		}
		warnings = append(warnings, Warning{Message: fmt.Sprintf(
			"%s.address = %q binds %s, but this node's roster ip is %s: connections to %s will not reach it; bind 0.0.0.0 or the roster ip",
			listener.name, listener.address, host, node.IP, node.IP)})
	}
	return warnings
}
