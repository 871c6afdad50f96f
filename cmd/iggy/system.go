package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

func (a *app) pingCommand() *cobra.Command {
	var count uint32
	cmd := &cobra.Command{
		Use:   "ping",
		Short: "ping iggy server",
		Long:  "Check that the server is up and report the round-trip time of each ping. No login is needed.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count == 0 {
				return usagef("ping: --count must be at least 1")
			}
			return a.withClient(cmd, false, func(ctx context.Context, c *client.Client) error {
				var times []float64
				width := len(strconv.FormatUint(uint64(count), 10))
				for i := uint32(1); i <= count; i++ {
					start := time.Now()
					if err := c.Ping(ctx); err != nil {
						return err
					}
					ms := float64(time.Since(start).Nanoseconds()) / 1e6
					times = append(times, ms)
					a.say("Ping sequence id: %*d time: %.2f ms", width, i, ms)
				}
				a.say("")
				a.say("Ping statistics for %d ping commands", count)
				a.say("%s", pingSummary(times))
				return nil
			})
		},
	}
	cmd.Flags().Uint32VarP(&count, "count", "c", 1, "stop after sending count pings")
	return cmd
}

// pingSummary renders min/avg/max/mdev like ping(8).
func pingSummary(ms []float64) string {
	if len(ms) == 0 {
		return "min/avg/max/mdev = 0.000/0.000/0.000/0.000 ms"
	}
	lo, hi, sum, sq := math.Inf(1), math.Inf(-1), 0.0, 0.0
	for _, v := range ms {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
		sum += v
		sq += v * v
	}
	n := float64(len(ms))
	avg := sum / n
	mdev := math.Sqrt(math.Max(sq/n-avg*avg, 0))
	return fmt.Sprintf("min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms", lo, avg, hi, mdev)
}

func transportName(t uint8) string {
	switch t {
	case wire.TransportTCP:
		return "TCP"
	case wire.TransportQUIC:
		return "QUIC"
	case wire.TransportWebSocket:
		return "WebSocket"
	}
	return fmt.Sprintf("unknown(%d)", t)
}

type meJSON struct {
	ClientID  uint32 `json:"client_id"`
	UserID    uint32 `json:"user_id"`
	Address   string `json:"address"`
	Transport string `json:"transport"`
}

func (a *app) meCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "me",
		Short: "get current client info",
		Long:  "Show this connection's client ID, user ID, address and transport as the server sees them.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				d, err := c.GetMe(ctx)
				if err != nil {
					return err
				}
				j := meJSON{ClientID: d.ClientID, UserID: d.UserID, Address: d.Address, Transport: transportName(d.Transport)}
				return a.emit("", propertyView(j,
					[2]string{"Client ID", fmt.Sprint(j.ClientID)},
					[2]string{"User ID", fmt.Sprint(j.UserID)},
					[2]string{"Address", j.Address},
					[2]string{"Transport", j.Transport}))
			})
		},
	}
}

type statsJSON struct {
	ProcessID           uint32  `json:"process_id" toml:"process_id"`
	CPUUsage            float32 `json:"cpu_usage" toml:"cpu_usage"`
	TotalCPUUsage       float32 `json:"total_cpu_usage" toml:"total_cpu_usage"`
	MemoryUsage         uint64  `json:"memory_usage" toml:"memory_usage"`
	TotalMemory         uint64  `json:"total_memory" toml:"total_memory"`
	AvailableMemory     uint64  `json:"available_memory" toml:"available_memory"`
	RunTime             uint64  `json:"run_time" toml:"run_time"`
	StartTime           uint64  `json:"start_time" toml:"start_time"`
	ReadBytes           uint64  `json:"read_bytes" toml:"read_bytes"`
	WrittenBytes        uint64  `json:"written_bytes" toml:"written_bytes"`
	MessagesSizeBytes   uint64  `json:"messages_size_bytes" toml:"messages_size_bytes"`
	StreamsCount        uint32  `json:"streams_count" toml:"streams_count"`
	TopicsCount         uint32  `json:"topics_count" toml:"topics_count"`
	PartitionsCount     uint32  `json:"partitions_count" toml:"partitions_count"`
	SegmentsCount       uint32  `json:"segments_count" toml:"segments_count"`
	MessagesCount       uint64  `json:"messages_count" toml:"messages_count"`
	ClientsCount        uint32  `json:"clients_count" toml:"clients_count"`
	ConsumerGroupsCount uint32  `json:"consumer_groups_count" toml:"consumer_groups_count"`
	Hostname            string  `json:"hostname" toml:"hostname"`
	OSName              string  `json:"os_name" toml:"os_name"`
	OSVersion           string  `json:"os_version" toml:"os_version"`
	KernelVersion       string  `json:"kernel_version" toml:"kernel_version"`
	IggyServerVersion   string  `json:"iggy_server_version" toml:"iggy_server_version"`
	ThreadsCount        uint32  `json:"threads_count" toml:"threads_count"`
	FreeDiskSpace       uint64  `json:"free_disk_space" toml:"free_disk_space"`
	TotalDiskSpace      uint64  `json:"total_disk_space" toml:"total_disk_space"`
}

func statsView(s *wire.Stats) (statsJSON, view) {
	j := statsJSON{
		ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage,
		MemoryUsage: s.MemoryUsage, TotalMemory: s.TotalMemory, AvailableMemory: s.AvailableMemory,
		RunTime: s.RunTime, StartTime: s.StartTime, ReadBytes: s.ReadBytes, WrittenBytes: s.WrittenBytes,
		MessagesSizeBytes: s.MessagesSizeBytes, StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount,
		PartitionsCount: s.PartitionsCount, SegmentsCount: s.SegmentsCount, MessagesCount: s.MessagesCount,
		ClientsCount: s.ClientsCount, ConsumerGroupsCount: s.ConsumerGroupsCount, Hostname: s.Hostname,
		OSName: s.OSName, OSVersion: s.OSVersion, KernelVersion: s.KernelVersion,
		IggyServerVersion: s.ServerVersion, ThreadsCount: s.ThreadsCount,
		FreeDiskSpace: s.FreeDiskSpace, TotalDiskSpace: s.TotalDiskSpace,
	}
	v := propertyView(j,
		[2]string{"Iggy Server PID", fmt.Sprint(j.ProcessID)},
		[2]string{"Iggy Server CPU Usage", fmt.Sprintf("%.4f %%", j.CPUUsage)},
		[2]string{"Total CPU Usage", fmt.Sprintf("%.4f %%", j.TotalCPUUsage)},
		[2]string{"Iggy Server Memory Usage", formatBytes(j.MemoryUsage)},
		[2]string{"Total Memory (RAM)", formatBytes(j.TotalMemory)},
		[2]string{"Available Memory (RAM)", formatBytes(j.AvailableMemory)},
		[2]string{"Iggy Server Run Time", formatDuration(j.RunTime)},
		[2]string{"Start Time (UTC)", formatMicros(j.StartTime)},
		[2]string{"Read Bytes", formatBytes(j.ReadBytes)},
		[2]string{"Written Bytes", formatBytes(j.WrittenBytes)},
		[2]string{"Messages Size Bytes", formatBytes(j.MessagesSizeBytes)},
		[2]string{"Streams Count", fmt.Sprint(j.StreamsCount)},
		[2]string{"Topics Count", fmt.Sprint(j.TopicsCount)},
		[2]string{"Partitions Count", fmt.Sprint(j.PartitionsCount)},
		[2]string{"Segments Count", fmt.Sprint(j.SegmentsCount)},
		[2]string{"Message Count", fmt.Sprint(j.MessagesCount)},
		[2]string{"Clients Count", fmt.Sprint(j.ClientsCount)},
		[2]string{"Consumer Groups Count", fmt.Sprint(j.ConsumerGroupsCount)},
		[2]string{"Threads Count", fmt.Sprint(j.ThreadsCount)},
		[2]string{"Free Disk Space", formatBytes(j.FreeDiskSpace)},
		[2]string{"Total Disk Space", formatBytes(j.TotalDiskSpace)},
		[2]string{"OS Name", j.OSName},
		[2]string{"OS Version", j.OSVersion},
		[2]string{"Kernel Version", j.KernelVersion},
		[2]string{"Iggy Server Version", j.IggyServerVersion},
		[2]string{"Hostname", j.Hostname},
	)
	return j, v
}

func (a *app) statsCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "get iggy server statistics",
		Long:  "Show server statistics: stream, topic, partition and message counts, resource usage and host details.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// stats has upstream's own -o/--output (table, list, json, toml), which shadows the global one.
			f, err := a.format(output, formatTable, formatList, formatJSON, formatTOML)
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				s, err := c.GetStats(ctx)
				if err != nil {
					return err
				}
				j, v := statsView(s)
				if f == formatTOML {
					return toml.NewEncoder(a.stdout).Encode(j)
				}
				return writeView(a.stdout, f, v)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", formatTable, "output format: table, list, json or toml")
	return cmd
}

func (a *app) clusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cluster",
		Aliases: []string{"cl"},
		Short:   "cluster operations",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var mode string
	meta := &cobra.Command{
		Use:     "metadata",
		Aliases: []string{"m"},
		Short:   "get cluster metadata",
		Long:    "Show the cluster name and each node's address, transport ports, role and status.",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := a.format(mode)
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				m, err := c.GetClusterMetadata(ctx)
				if err != nil {
					return err
				}
				if f == formatTable && !a.globals.quiet {
					fmt.Fprintf(a.stdout, "Cluster name: %s\n", m.Name)
				}
				return writeView(a.stdout, f, clusterView(m))
			})
		},
	}
	listModeFlag(meta, &mode)
	cmd.AddCommand(meta)
	return cmd
}

type clusterNodeJSON struct {
	Name      string `json:"name"`
	IP        string `json:"ip"`
	TCP       uint16 `json:"tcp,omitempty"`
	QUIC      uint16 `json:"quic,omitempty"`
	HTTP      uint16 `json:"http,omitempty"`
	WebSocket uint16 `json:"websocket,omitempty"`
	Role      string `json:"role"`
	Status    string `json:"status"`
}

type clusterJSON struct {
	Name  string            `json:"name"`
	Nodes []clusterNodeJSON `json:"nodes"`
}

func roleName(r uint8) string {
	switch r {
	case wire.RoleLeader:
		return "leader"
	case wire.RoleFollower:
		return "follower"
	}
	return fmt.Sprintf("unknown(%d)", r)
}

func nodeStatusName(s uint8) string {
	switch s {
	case wire.NodeHealthy:
		return "healthy"
	case wire.NodeStarting:
		return "starting"
	case wire.NodeStopping:
		return "stopping"
	case wire.NodeUnreachable:
		return "unreachable"
	case wire.NodeMaintenance:
		return "maintenance"
	}
	return fmt.Sprintf("unknown(%d)", s)
}

func portString(p uint16) string {
	if p == 0 {
		return "-"
	}
	return strconv.Itoa(int(p))
}

func clusterView(m *wire.ClusterMetadata) view {
	j := clusterJSON{Name: m.Name, Nodes: []clusterNodeJSON{}}
	var rows [][]string
	for _, n := range m.Nodes {
		nj := clusterNodeJSON{Name: n.Name, IP: n.IP, TCP: n.TCP, QUIC: n.QUIC, HTTP: n.HTTP, WebSocket: n.WebSocket,
			Role: roleName(n.Role), Status: nodeStatusName(n.Status)}
		j.Nodes = append(j.Nodes, nj)
		rows = append(rows, []string{nj.Name, nj.IP, portString(n.TCP), portString(n.QUIC), portString(n.HTTP),
			portString(n.WebSocket), nj.Role, nj.Status})
	}
	return view{json: j, headers: []string{"Name", "IP", "TCP", "QUIC", "HTTP", "WebSocket", "Role", "Status"}, rows: rows}
}
