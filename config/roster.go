package config

import (
	"net/netip"
	"strconv"
	"strings"
)

// validateRoster checks [[cluster.nodes]] (cluster enabled only).
func (c *Config) validateRoster(v *violations) {
	nodes := c.Cluster.Nodes
	if len(nodes) == 0 {
		v.add("cluster.nodes is empty: must list at least one node when cluster.enabled = true")
		return
	}
	if len(nodes) > clusterNodesMax {
		v.add("cluster.nodes has %d entries: at most %d nodes are supported", len(nodes), clusterNodesMax)
		return
	}
	names := map[string]bool{}
	ids := map[uint8]string{}
	binds := map[string]string{}
	var endpoints []advertisedEndpoint
	required := map[string]bool{
		TransportTCP: true, TransportTCPReplica: true,
		TransportQUIC: c.QUIC.Enabled, TransportHTTP: c.HTTP.Enabled, TransportWebSocket: c.WebSocket.Enabled,
	}
	for i, node := range nodes {
		label := nodeLabel(i, node)
		if strings.TrimSpace(node.Name) == "" {
			v.add("cluster.nodes[%d].name is empty: every node needs a unique non-empty name", i)
		} else if names[node.Name] {
			v.add("%s: duplicate node name %q: names must be unique", label, node.Name)
		}
		names[node.Name] = true

		if int(node.ReplicaID) >= len(nodes) {
			v.add("%s: replica_id = %d: must be less than the node count %d (ids are exactly 0..%d)", label, node.ReplicaID, len(nodes), len(nodes)-1)
		}
		if other, taken := ids[node.ReplicaID]; taken {
			v.add("%s: duplicate replica_id = %d (also %s): ids must be unique", label, node.ReplicaID, other)
		} else {
			ids[node.ReplicaID] = label
		}

		ipKey := node.IP
		switch ip, err := netip.ParseAddr(node.IP); {
		case strings.TrimSpace(node.IP) == "":
			v.add("%s: ip is empty: must be a literal IP address", label)
		case err != nil:
			v.add("%s: ip = %q: must be a literal IPv4 or IPv6 address (hostnames are not allowed; use advertised_address for names)", label, node.IP)
		case ip.IsUnspecified():
			v.add("%s: ip = %q: must not be the unspecified address (0.0.0.0 or ::); bind addresses come from each transport's address", label, node.IP)
		default:
			ipKey = ip.String()
		}

		for _, entry := range node.Ports.All() {
			if entry.Port == nil {
				if required[entry.Transport] {
					v.add("%s: ports.%s is not set: cluster mode requires %s", label, entry.Transport, requiredReason(entry.Transport))
				}
				continue
			}
			if *entry.Port == 0 {
				v.add("%s: ports.%s = 0: port 0 is not allowed", label, entry.Transport)
				continue
			}
			bind := ipKey + ":" + strconv.Itoa(int(*entry.Port))
			if ip, err := netip.ParseAddr(node.IP); err == nil {
				bind = netip.AddrPortFrom(ip, *entry.Port).String()
			}
			owner := label + " ports." + entry.Transport
			if previous, taken := binds[bind]; taken {
				v.add("%s: %s is already used by %s: every ip:port must be unique across nodes and transports", owner, bind, previous)
			} else {
				binds[bind] = owner
			}
		}
		endpoints = c.validateAdvertised(v, i, node, label, endpoints)
	}
}

func requiredReason(transport string) string {
	switch transport {
	case TransportTCP, TransportTCPReplica:
		return "explicit roster ports for tcp and tcp_replica on every node"
	default:
		return "an explicit roster port for every enabled transport (" + transport + ".enabled = true)"
	}
}

func nodeLabel(index int, node NodeConfig) string {
	if node.Name == "" {
		return "cluster.nodes[" + strconv.Itoa(index) + "]"
	}
	return "cluster.nodes[" + strconv.Itoa(index) + "] (" + node.Name + ")"
}

// validateAdvertised checks one node's advertised addresses and adds its
// client endpoints to the cross-node conflict pool.
func (c *Config) validateAdvertised(v *violations, index int, node NodeConfig, label string, pool []advertisedEndpoint) []advertisedEndpoint {
	var catchAll *AdvertisedHost
	if node.AdvertisedAddress != "" {
		host, err := ParseAdvertisedHost(node.AdvertisedAddress)
		if err != nil {
			v.add("%s: advertised_address = %q: %v", label, node.AdvertisedAddress, err)
		} else {
			catchAll = &host
		}
	} else if host, err := ParseAdvertisedHost(node.IP); err == nil {
		catchAll = &host
	}
	if len(node.AdvertisedAddresses) > advertisedSelectorsMax {
		v.add("%s: %d advertised_addresses: at most %d selectors per node", label, len(node.AdvertisedAddresses), advertisedSelectorsMax)
		return pool
	}
	type selector struct {
		prefix netip.Prefix
		host   AdvertisedHost
	}
	var selectors []selector
	seen := map[netip.Prefix]string{}
	valid := true
	for j, entry := range node.AdvertisedAddresses {
		prefix, err := ParseClientCIDR(entry.ClientCIDR)
		if err != nil {
			v.add("%s: advertised_addresses[%d].client_cidr = %q: %v", label, j, entry.ClientCIDR, err)
			valid = false
			continue
		}
		if previous, duplicate := seen[prefix]; duplicate {
			v.add("%s: advertised_addresses[%d].client_cidr = %q is the same network as %q (%s): duplicate selector", label, j, entry.ClientCIDR, previous, prefix)
			valid = false
			continue
		}
		seen[prefix] = entry.ClientCIDR
		host, err := ParseAdvertisedHost(entry.Address)
		if err != nil {
			v.add("%s: advertised_addresses[%d].address = %q: %v", label, j, entry.Address, err)
			valid = false
			continue
		}
		selectors = append(selectors, selector{prefix, host})
	}
	if !valid {
		return pool
	}
	ranges := make([]addrRange, len(selectors))
	for j, s := range selectors {
		ranges[j] = rangeOfPrefix(s.prefix)
	}
	clientPorts := node.Ports.All()[:4]
	add := func(endpoint advertisedEndpoint) {
		for _, existing := range pool {
			if existing.conflicts(endpoint) {
				v.add("advertised endpoint conflict: %s is advertised by %s (%s, %s) and by %s (%s, %s); their effective client sets overlap, so one client would resolve both nodes to the same endpoint",
					endpoint.host.Authority(endpoint.port), existing.node, existing.transport, existing.scope,
					endpoint.node, endpoint.transport, endpoint.scope)
				return
			}
		}
		pool = append(pool, endpoint)
	}
	if catchAll != nil {
		clients := catchAllClients(ranges)
		for _, port := range clientPorts {
			if port.Port != nil {
				add(advertisedEndpoint{node: label, nodeIndex: index, transport: port.Transport, scope: "catch-all",
					host: *catchAll, port: *port.Port, clients: clients, unknownPeers: true})
			}
		}
	}
	for j, s := range selectors {
		var siblings []addrRange
		for k, r := range ranges {
			if k != j {
				siblings = append(siblings, r)
			}
		}
		clients := subtractNested(ranges[j], siblings)
		for _, port := range clientPorts {
			if port.Port != nil {
				add(advertisedEndpoint{node: label, nodeIndex: index, transport: port.Transport,
					scope: "client_cidr " + s.prefix.String(), host: s.host, port: *port.Port, clients: clients})
			}
		}
	}
	return pool
}

// advertisedEndpoint is one host:port a node tells some set of clients.
type advertisedEndpoint struct {
	node         string
	nodeIndex    int
	transport    string
	scope        string
	host         AdvertisedHost
	port         uint16
	clients      []addrRange
	unknownPeers bool // the catch-all also serves clients of unknown address
}

func (e advertisedEndpoint) conflicts(other advertisedEndpoint) bool {
	if e.nodeIndex == other.nodeIndex || e.port != other.port || e.host != other.host {
		return false
	}
	if e.unknownPeers && other.unknownPeers {
		return true
	}
	for _, a := range e.clients {
		for _, b := range other.clients {
			if a.v4 == b.v4 && !a.last.less(b.first) && !b.last.less(a.first) {
				return true
			}
		}
	}
	return false
}
