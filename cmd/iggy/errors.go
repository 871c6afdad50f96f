package main

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// describeError renders err for a person: server error codes by their upstream name and number,
// with a hint for the common ones.
func describeError(err error, addr string) string {
	var ue *usageError
	if errors.As(err, &ue) {
		return ue.msg
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("cannot connect to %s: connection refused; is iggy-server running there? (set --tcp-server-address)", addr)
	}
	prefix := ""
	var le *loginError
	if errors.As(err, &le) {
		prefix = le.Error()
		var ce *client.Error
		if errors.As(err, &ce) {
			who := "login with personal access token"
			if le.username != "" {
				who = fmt.Sprintf("login as %q", le.username)
			}
			prefix = fmt.Sprintf("%s failed: %s", who, describeCode(ce.Code))
		}
		if h := hint(client.CodeOf(err)); h != "" {
			prefix += "; " + h
		}
		return prefix
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		msg := describeCode(ce.Code)
		if ce.Command != 0 {
			msg = fmt.Sprintf("%s failed: %s", ce.Command, msg)
		}
		if ce.Err != nil {
			msg += ": " + ce.Err.Error()
		}
		if h := hint(ce.Code); h != "" {
			msg += "; " + h
		}
		return msg
	}
	return err.Error()
}

// describeCode renders "StreamIdNotFound (error 1009)".
func describeCode(code wire.ErrorCode) string {
	name := code.Name()
	if name == "" {
		name = "unknown error"
	}
	return fmt.Sprintf("%s (error %d)", name, uint32(code))
}

func hint(code wire.ErrorCode) string {
	switch code {
	case wire.ErrUnauthenticated:
		return "log in with -u USERNAME -p PASSWORD before the command, or set IGGY_USERNAME and IGGY_PASSWORD"
	case wire.ErrInvalidCredentials:
		return "check the user name and password"
	case wire.ErrUnauthorized:
		return "the user lacks the permission for this command"
	case wire.ErrStreamIDNotFound, wire.ErrStreamNameNotFound:
		return "list streams with 'iggy stream list'"
	case wire.ErrTopicIDNotFound, wire.ErrTopicNameNotFound:
		return "list topics with 'iggy topic list STREAM'"
	case wire.ErrFeatureUnavailable:
		return "this server does not offer that command or feature (see docs/cli.md, 'Differences from upstream')"
	case wire.ErrPartitionNotFound:
		return "see the topic's partitions with 'iggy topic get STREAM TOPIC'"
	}
	return ""
}
