package client

import (
	"context"
	"errors"

	"github.com/lodestream/lodestream/wire"
)

// send encodes req (validated by the strict decoder), runs it and returns the payload.
func (c *Client) send(ctx context.Context, req wire.Request) ([]byte, error) {
	body, err := wire.EncodeRequestBody(req)
	if err != nil {
		return nil, &Error{Code: wire.ErrInvalidCommand, Command: req.Code(), Err: err}
	}
	return c.call(ctx, req.Code(), body)
}

// sendExpectEmpty runs req and requires an empty payload.
func (c *Client) sendExpectEmpty(ctx context.Context, req wire.Request) error {
	payload, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	if len(payload) != 0 {
		return &Error{Code: wire.ErrInvalidCommand, Command: req.Code(), Err: errors.New("unexpected reply payload")}
	}
	return nil
}

// sendLookup runs a read whose empty reply means "not found" and maps it to the command's code (§3.2).
func (c *Client) sendLookup(ctx context.Context, req wire.Request) ([]byte, error) {
	payload, err := c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(payload) == 0 {
		info, _ := req.Code().Info()
		return nil, &Error{Code: info.NotFound, Command: req.Code()}
	}
	return payload, nil
}

func decodeErr(code wire.CommandCode, err error) error {
	return &Error{Code: wire.ErrInvalidCommand, Command: code, Err: err}
}

// Ping checks the connection (allowed before login).
func (c *Client) Ping(ctx context.Context) error {
	return c.sendExpectEmpty(ctx, wire.EmptyRequest{Command: wire.CodePing})
}

// GetStats returns server statistics.
func (c *Client) GetStats(ctx context.Context) (*wire.Stats, error) {
	payload, err := c.send(ctx, wire.EmptyRequest{Command: wire.CodeGetStats})
	if err != nil {
		return nil, err
	}
	s, err := wire.DecodeStats(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetStats, err)
	}
	return &s, nil
}

// GetMe returns this connection's client record.
func (c *Client) GetMe(ctx context.Context) (*wire.ClientDetails, error) {
	payload, err := c.send(ctx, wire.EmptyRequest{Command: wire.CodeGetMe})
	if err != nil {
		return nil, err
	}
	d, err := wire.DecodeClientDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetMe, err)
	}
	return &d, nil
}

// GetClient returns one client record; an unknown id is ClientNotFound (100).
func (c *Client) GetClient(ctx context.Context, clientID uint32) (*wire.ClientDetails, error) {
	payload, err := c.sendLookup(ctx, wire.GetClientRequest{ClientID: clientID})
	if err != nil {
		return nil, err
	}
	d, err := wire.DecodeClientDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetClient, err)
	}
	return &d, nil
}

// GetClients lists connected clients.
func (c *Client) GetClients(ctx context.Context) ([]wire.Client, error) {
	payload, err := c.send(ctx, wire.EmptyRequest{Command: wire.CodeGetClients})
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodeClients(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetClients, err)
	}
	return out, nil
}

// GetClusterMetadata returns the cluster roster (§5.1).
func (c *Client) GetClusterMetadata(ctx context.Context) (*wire.ClusterMetadata, error) {
	payload, err := c.send(ctx, wire.EmptyRequest{Command: wire.CodeGetClusterMetadata})
	if err != nil {
		return nil, err
	}
	m, err := wire.DecodeClusterMetadata(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetClusterMetadata, err)
	}
	return &m, nil
}

// DescribeOptions returns the option catalog of a resource scope.
func (c *Client) DescribeOptions(ctx context.Context, scope wire.DescribeScope) ([]wire.OptionSpec, error) {
	payload, err := c.send(ctx, wire.DescribeOptionsRequest{Scope: scope})
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodeOptionSpecs(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeDescribeOptions, err)
	}
	return out, nil
}

// LoginUser signs in with username and password (LoginRegister, code 40) and binds the session.
func (c *Client) LoginUser(ctx context.Context, username, password string) (*wire.RegisterReply, error) {
	return c.register(ctx, wire.CodeLoginRegister, wire.RegisterRequest{Kind: wire.RegisterWithPassword, Username: username, Password: password})
}

// LoginWithPersonalAccessToken signs in with a PAT (LoginRegisterWithPat, code 45).
func (c *Client) LoginWithPersonalAccessToken(ctx context.Context, token string) (*wire.RegisterReply, error) {
	return c.register(ctx, wire.CodeLoginRegisterWithPat, wire.RegisterRequest{Kind: wire.RegisterWithToken, Token: token})
}

func (c *Client) register(ctx context.Context, code wire.CommandCode, req wire.RegisterRequest) (*wire.RegisterReply, error) {
	req.Version = wire.ClientVersionInfo{ProtocolVersion: c.cfg.protocolVersion, SDKName: c.cfg.sdkName, SDKVersion: c.cfg.sdkVersion}
	body, err := req.Encode()
	if err != nil {
		return nil, &Error{Code: wire.ErrInvalidCommand, Command: code, Err: err}
	}
	payload, err := c.call(ctx, code, body)
	if err != nil {
		return nil, err
	}
	r, err := wire.DecodeRegisterReply(payload)
	if err != nil {
		return nil, decodeErr(code, err)
	}
	return &r, nil
}

// Logout releases the session (Logout, operation 3).
func (c *Client) Logout(ctx context.Context) error {
	return c.sendExpectEmpty(ctx, wire.EmptyRequest{Command: wire.CodeLogoutUser})
}

// GetSnapshot returns the server's diagnostics archive (GetSnapshotFile, code 11): a ZIP file
// with one entry per requested type, compressed as asked (upstream's SnapshotCompression codes).
func (c *Client) GetSnapshot(ctx context.Context, compression uint8, types []uint8) ([]byte, error) {
	return c.send(ctx, wire.GetSnapshotFileRequest{Compression: compression, Types: types})
}
