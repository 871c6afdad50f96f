package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/partitions"
)

// exitDamageFound: `iggy-server check` found damage (listed on stdout).
const exitDamageFound = 3

// damageFound makes check exit with exitDamageFound.
type damageFound struct{ n int }

func (d damageFound) Error() string { return fmt.Sprintf("%d problem(s) found", d.n) }
func (d damageFound) ExitCode() int { return exitDamageFound }

// offlineCommands are `check` and `repair`: they work on a data directory
// with no server running on it (the metadata lock is taken) and never
// start a node.
func offlineCommands(inv invocation, ran *bool) []*cobra.Command {
	var path string
	check := &cobra.Command{
		Use:   "check",
		Short: "verify a data directory offline (no server may run on it); exit 3 when damage is found",
		Long: `Verifies every checksum of a data directory without changing anything: the
metadata superblock copies, snapshot and journal, and every partition's
segments, indexes and consumer offsets. Each problem is printed with its file
and position. Exit 0: sound; 3: damage found; 2: the directory could not be
checked.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			*ran = true
			dir, err := offlineDataDir(inv, path)
			if err != nil {
				return refusal{err}
			}
			unlock, err := lockOffline(dir)
			if err != nil {
				return refusal{err}
			}
			defer unlock()
			n, err := checkDataDir(inv.stdout, dir)
			if err != nil {
				return refusal{err}
			}
			if n > 0 {
				return damageFound{n}
			}
			fmt.Fprintf(inv.stdout, "%s: sound\n", dir)
			return nil
		},
	}
	check.Flags().StringVar(&path, "path", "", "data directory (default: system.path of the configuration)")

	var repairPath string
	var truncateWAL, cutPartitions bool
	repair := &cobra.Command{
		Use:   "repair",
		Short: "salvage a single node's damaged data directory offline, by an explicit choice",
		Long: `Salvages a single node's data directory (a cluster replica repairs from its
peers instead: wipe it and let it rejoin). Nothing is done without a choice:

  --truncate-metadata-wal   cut the metadata journal at its first damaged record,
                            dropping that record and every later one (those
                            metadata changes are lost)
  --cut-partition-damage    cut each damaged partition at its first damaged range:
                            later segments are kept aside as *.log.corrupt-<nanos>,
                            the verified prefix is served, offsets already handed
                            out are never handed out again

A running server already serves around damaged partition ranges (refusing
only them); cutting is for an operator who prefers a contiguous log.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			*ran = true
			if !truncateWAL && !cutPartitions {
				return refusal{errors.New("repair: choose what to salvage: --truncate-metadata-wal and/or --cut-partition-damage")}
			}
			dir, err := offlineDataDir(inv, repairPath)
			if err != nil {
				return refusal{err}
			}
			if clustered(dir) {
				return refusal{fmt.Errorf("repair: %s belongs to a cluster replica (its partitions carry superblocks): wipe it and let it rejoin by state transfer", dir)}
			}
			unlock, err := lockOffline(dir)
			if err != nil {
				return refusal{err}
			}
			defer unlock()
			return repairDataDir(inv.stdout, dir, truncateWAL, cutPartitions)
		},
	}
	repair.Flags().StringVar(&repairPath, "path", "", "data directory (default: system.path of the configuration)")
	repair.Flags().BoolVar(&truncateWAL, "truncate-metadata-wal", false, "cut the metadata journal at its first damaged record")
	repair.Flags().BoolVar(&cutPartitions, "cut-partition-damage", false, "cut each damaged partition at its first damaged range")
	return []*cobra.Command{check, repair}
}

// offlineDataDir is --path, or system.path of the configuration.
func offlineDataDir(inv invocation, path string) (string, error) {
	if path == "" {
		cfg, _, err := config.Load(inv.env)
		if err != nil {
			return "", fmt.Errorf("configuration: %w", err)
		}
		path = cfg.System.Path
	}
	if st, err := os.Stat(filepath.Join(path, "metadata")); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is not a data directory (no metadata/ in it)", path)
	}
	return path, nil
}

// lockOffline takes the server's metadata lock so no server runs on dir meanwhile.
func lockOffline(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "metadata", ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the metadata lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by a running server (stop it first): %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// partitionDirs lists <dir>/streams/*/topics/*/partitions/*.
func partitionDirs(dir string) []string {
	dirs, _ := filepath.Glob(filepath.Join(dir, "streams", "*", "topics", "*", "partitions", "*"))
	return dirs
}

func clustered(dir string) bool {
	for _, p := range partitionDirs(dir) {
		if _, err := os.Stat(filepath.Join(p, "superblock.a")); err == nil {
			return true
		}
	}
	return false
}

// checkDataDir prints every problem found and returns how many.
func checkDataDir(out io.Writer, dir string) (int, error) {
	n := 0
	for _, f := range journal.CheckMetadata(filepath.Join(dir, "metadata")) {
		fmt.Fprintf(out, "metadata/%s\n", f)
		n++
	}
	// A cluster node's partition superblock log (node/partition_vsr.go).
	if _, damage, err := journal.ReadSuperblockLog(filepath.Join(dir, "partition_groups")); err != nil {
		fmt.Fprintf(out, "partition_groups: %v\n", err)
		n++
	} else if damage != "" {
		fmt.Fprintf(out, "partition_groups/%s\n", damage)
		n++
	}
	for _, p := range partitionDirs(dir) {
		rel, _ := filepath.Rel(dir, p)
		findings, err := partitions.Check(p)
		if err != nil {
			fmt.Fprintf(out, "%s: %v\n", rel, err)
			n++
			continue
		}
		for _, f := range findings {
			fmt.Fprintf(out, "%s/%s\n", rel, f)
			n++
		}
	}
	return n, nil
}

func repairDataDir(out io.Writer, dir string, truncateWAL, cutPartitions bool) error {
	if truncateWAL {
		cut, err := journal.TruncateWALAtDamage(filepath.Join(dir, "metadata"))
		switch {
		case err != nil:
			return fmt.Errorf("repair metadata journal: %w", err)
		case cut == nil:
			fmt.Fprintln(out, "metadata journal: sound, nothing cut")
		default:
			fmt.Fprintf(out, "metadata/%s: cut at byte %d, %d bytes dropped", cut.File, cut.At, cut.Dropped)
			if len(cut.Removed) > 0 {
				fmt.Fprintf(out, " (later segments removed: %s)", strings.Join(cut.Removed, ", "))
			}
			fmt.Fprintln(out)
		}
	}
	if cutPartitions {
		for _, p := range partitionDirs(dir) {
			rel, _ := filepath.Rel(dir, p)
			cut, err := partitions.CutAtFirstDamage(p)
			if err != nil {
				return fmt.Errorf("repair %s: %w", rel, err)
			}
			if cut != nil {
				fmt.Fprintf(out, "%s: cut at %s byte %d (offset %d); later segments kept as *.corrupt-*\n", rel, cut.File,
					cut.Position, cut.FirstOffset)
			}
		}
	}
	return nil
}
