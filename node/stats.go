package node

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// clockTicksPerSecond is USER_HZ, 100 on every Linux target Go supports.
const clockTicksPerSecond = 100

// stats gathers GetStats figures: process and host figures from /proc and
// statfs, entity counts from the metadata state. Message, size and segment
// figures are zero until the partition plane (and its segment files) lands.
func (n *Node) stats() wire.Stats {
	streams, topics, partitions, groups := n.state.Counts()
	runFor := time.Since(n.startedAt)
	st := wire.Stats{
		ProcessID:           uint32(os.Getpid()),
		RunTime:             uint64(runFor.Microseconds()),
		StartTime:           uint64(n.startedAt.UnixMicro()),
		StreamsCount:        uint32(streams),
		TopicsCount:         uint32(topics),
		PartitionsCount:     uint32(partitions),
		ClientsCount:        uint32(n.sessions.count()),
		ConsumerGroupsCount: uint32(groups),
		OSName:              osName(),
		OSVersion:           osVersion(),
		KernelVersion:       kernelVersion(),
		ServerVersion:       ServerVersion,
		ServerSemver:        semver(ServerVersion),
	}
	tot := n.planeTotals()
	st.MessagesSizeBytes, st.MessagesCount, st.SegmentsCount = tot.sizeBytes, tot.messages, tot.segments
	st.Hostname, _ = os.Hostname()
	if cpuSeconds, ok := processCPUSeconds(); ok && runFor > 0 {
		st.CPUUsage = float32(cpuSeconds / runFor.Seconds() * 100)
	}
	st.TotalCPUUsage = hostCPUBusyPercent()
	status := procKeyValues("/proc/self/status")
	st.MemoryUsage = status["VmRSS"] * 1024
	st.ThreadsCount = uint32(status["Threads"])
	mem := procKeyValues("/proc/meminfo")
	st.TotalMemory = mem["MemTotal"] * 1024
	st.AvailableMemory = mem["MemAvailable"] * 1024
	io := procKeyValues("/proc/self/io")
	st.ReadBytes, st.WrittenBytes = io["read_bytes"], io["write_bytes"]
	var fs syscall.Statfs_t
	if err := syscall.Statfs(n.dataDir, &fs); err == nil {
		st.FreeDiskSpace = fs.Bavail * uint64(fs.Bsize)
		st.TotalDiskSpace = fs.Blocks * uint64(fs.Bsize)
	}
	return st
}

// procKeyValues reads "key: number [kB]" lines (status, meminfo, io files).
func procKeyValues(path string) map[string]uint64 {
	out := make(map[string]uint64)
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
			out[key] = v
		}
	}
	return out
}

// processCPUSeconds is user + system CPU time from /proc/self/stat.
func processCPUSeconds() (float64, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(utime+stime) / clockTicksPerSecond, true
}

// hostCPUBusyPercent is the host's busy share of CPU time since boot.
func hostCPUBusyPercent() float32 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	var total, idle uint64
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	if total == 0 {
		return 0
	}
	return float32(total-idle) / float32(total) * 100
}

func osName() string {
	if runtime.GOOS == "linux" {
		return "Linux"
	}
	return runtime.GOOS
}

// osVersion is the distribution's PRETTY_NAME, else VERSION_ID.
func osVersion() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vals[k] = strings.Trim(v, `"`)
		}
	}
	if v := vals["PRETTY_NAME"]; v != "" {
		return v
	}
	return vals["VERSION_ID"]
}

func kernelVersion() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// semver packs "major.minor.patch" the way Iggy's stats do:
// major*1_000_000 + minor*1_000 + patch (0 when it does not parse).
func semver(v string) uint32 {
	parts := strings.SplitN(strings.SplitN(v, "-", 2)[0], ".", 3)
	if len(parts) != 3 {
		return 0
	}
	var out uint32
	for _, p := range parts {
		x, err := strconv.ParseUint(p, 10, 32)
		if err != nil || x >= 1000 {
			return 0
		}
		out = out*1000 + uint32(x)
	}
	return out
}
