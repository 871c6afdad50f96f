package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Upstream's SnapshotCompression and SystemSnapshotType codes (the server's wire values).
var (
	snapshotCompressions = map[string]uint8{"stored": 1, "none": 1, "deflated": 2, "bzip2": 3, "zstd": 4, "lzma": 5, "xz": 6}
	snapshotTypes        = map[string]uint8{"filesystem_overview": 1, "process_list": 2, "resource_usage": 3, "test": 4,
		"server_logs": 5, "server_config": 6, "all": 100}
	defaultSnapshotTypes = []string{"filesystem_overview", "process_list", "resource_usage", "server_logs"}
)

func (a *app) snapshotCommand() *cobra.Command {
	var (
		compression string
		types       []string
		outDir      string
	)
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "collect iggy server troubleshooting data",
		Long: "Download a ZIP archive of server diagnostics into --out-dir as snapshot_YYYYMMDD_HHMMSS.zip.\n" +
			"Compression: stored (none), deflated (default), bzip2, zstd, lzma, xz. Types: filesystem_overview,\n" +
			"process_list, resource_usage, test, server_logs, server_config, all (default: the first three and server_logs).",
		Example: "  iggy snapshot\n  iggy snapshot -c stored -s process_list resource_usage -o /var/snapshots",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && !cmd.Flags().Changed("snapshot-types") {
				return noArgs(cmd, args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// Upstream's -s takes several space-separated values: "-s process_list resource_usage".
			types = append(types, args...)
			comp, ok := snapshotCompressions[strings.ToLower(compression)]
			if !ok {
				return usagef("--compression %q: use stored, deflated, bzip2, zstd, lzma or xz", compression)
			}
			if len(types) == 0 {
				types = defaultSnapshotTypes
			}
			var codes []uint8
			for _, t := range types {
				for _, name := range strings.Fields(t) { // upstream splits one value on spaces too
					code, ok := snapshotTypes[strings.ToLower(name)]
					if !ok {
						return usagef("--snapshot-types %q: use filesystem_overview, process_list, resource_usage, test, server_logs, server_config or all", name)
					}
					codes = append(codes, code)
				}
			}
			if len(codes) > 255 {
				return usagef("--snapshot-types: at most 255 types")
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				data, err := c.GetSnapshot(ctx, comp, codes)
				if err != nil {
					return err
				}
				path := filepath.Join(outDir, "snapshot_"+time.Now().Format("20060102_150405")+".zip")
				if err := os.WriteFile(path, data, 0o644); err != nil {
					return fmt.Errorf("write snapshot: %w", err)
				}
				return a.emit("", propertyView(map[string]any{"file_path": path, "file_size": len(data)},
					[2]string{"File Path", path}, [2]string{"File Size (bytes)", fmt.Sprint(len(data))}))
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&compression, "compression", "c", "deflated", "snapshot compression")
	fl.StringSliceVarP(&types, "snapshot-types", "s", nil, "snapshot types to include (space- or comma-separated)")
	fl.StringVarP(&outDir, "out-dir", "o", ".", "directory the snapshot file is written to")
	return cmd
}

func (a *app) optionsCommand() *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:   "options topic|stream|user",
		Short: "list the options a resource's create command accepts",
		Long: "Print the server's option catalog for one scope: every key, the kind of its value, its default\n" +
			"and a description. These are the keys 'topic create --set' takes.",
		Example: "  iggy options topic",
		Args:    exactArgs(1, "SCOPE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			scopes := map[string]wire.DescribeScope{"topic": wire.ScopeTopic, "stream": wire.ScopeStream, "user": wire.ScopeUser}
			scope, ok := scopes[strings.ToLower(args[0])]
			if !ok {
				return usagef("scope %q: use topic, stream or user", args[0])
			}
			f, err := a.format(mode)
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				specs, err := c.DescribeOptions(ctx, scope)
				if err != nil {
					return err
				}
				type specJSON struct {
					Key         string `json:"key"`
					Kind        string `json:"kind"`
					Default     string `json:"default"`
					Description string `json:"description"`
				}
				j := make([]specJSON, 0, len(specs))
				var rows [][]string
				for _, s := range specs {
					sj := specJSON{Key: s.Key, Kind: s.Kind.String(), Default: formatHeaderValue(s.Kind, s.Default), Description: s.Description}
					j = append(j, sj)
					rows = append(rows, []string{sj.Key, sj.Kind, sj.Default, sj.Description})
				}
				return writeView(a.stdout, f, view{json: j, headers: []string{"Key", "Kind", "Default", "Description"}, rows: rows})
			})
		},
	}
	listModeFlag(cmd, &mode)
	return cmd
}
