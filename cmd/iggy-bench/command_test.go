package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestExecuteRefusesRemoteAddressBeforeDialing(t *testing.T) {
	for _, addr := range []string{"10.0.0.1:8090", "192.168.0.2:8090", "example.com:8090", "[2001:db8::1]:8090"} {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), []string{"--address", addr, "pinned-producer"}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "not a loopback address") {
			t.Errorf("--address %s: exit %d, stderr %q; want exit %d naming the loopback rule", addr, code,
				stderr.String(), exitUsage)
		}
		if stdout.Len() != 0 {
			t.Errorf("--address %s printed a summary: %q", addr, stdout.String())
		}
	}
}

func TestExecuteUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "accepts 1 arg"},
		{[]string{"pinned"}, "unknown workload"},
		{[]string{"--message-batches", "3", "--total-data", "1GB", "pinned-producer"}, "exclusive"},
		{[]string{"--total-data", "lots", "pinned-producer"}, "--total-data"},
		{[]string{"--durability", "maybe", "pinned-producer"}, "--durability"},
		{[]string{"--producers", "0", "pinned-producer"}, "--producers"},
		{[]string{"--no-such-flag", "pinned-producer"}, "unknown flag"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), tc.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d containing %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}

func TestExecuteReportsUnreachableServer(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// Port 1 on loopback: nothing listens there, the dial fails at once.
	code := execute(context.Background(), []string{"--address", "127.0.0.1:1", "--no-progress", "pinned-producer"}, &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "connect to 127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want exit %d naming the address", code, stderr.String(), exitFailure)
	}
}
