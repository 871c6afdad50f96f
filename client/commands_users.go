package client

import (
	"context"

	"github.com/lodestream/lodestream/wire"
)

// GetUser returns a user with permissions; an unknown user is ResourceNotFound (20).
func (c *Client) GetUser(ctx context.Context, user wire.Identifier) (*wire.UserDetails, error) {
	payload, err := c.sendLookup(ctx, wire.IdentRequest{Command: wire.CodeGetUser, ID: user})
	if err != nil {
		return nil, err
	}
	u, err := wire.DecodeUserDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetUser, err)
	}
	return &u, nil
}

// GetUsers lists users.
func (c *Client) GetUsers(ctx context.Context) ([]wire.User, error) {
	payload, err := c.send(ctx, wire.EmptyRequest{Command: wire.CodeGetUsers})
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodeUsers(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetUsers, err)
	}
	return out, nil
}

// CreateUser creates a user; permissions may be nil.
func (c *Client) CreateUser(ctx context.Context, username, password string, status wire.UserStatus, permissions *wire.Permissions) (*wire.UserDetails, error) {
	payload, err := c.send(ctx, wire.CreateUserRequest{Username: username, Password: password, Status: status, Permissions: permissions})
	if err != nil {
		return nil, err
	}
	u, err := wire.DecodeUserDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeCreateUser, err)
	}
	return &u, nil
}

// UpdateUser changes a user's name and/or status (nil = unchanged).
func (c *Client) UpdateUser(ctx context.Context, user wire.Identifier, username *string, status *wire.UserStatus) error {
	return c.sendExpectEmpty(ctx, wire.UpdateUserRequest{User: user, Username: username, Status: status})
}

// DeleteUser deletes a user.
func (c *Client) DeleteUser(ctx context.Context, user wire.Identifier) error {
	return c.sendExpectEmpty(ctx, wire.IdentRequest{Command: wire.CodeDeleteUser, ID: user})
}

// ChangePassword changes a user's password (the server verifies the current one).
func (c *Client) ChangePassword(ctx context.Context, user wire.Identifier, current, replacement string) error {
	return c.sendExpectEmpty(ctx, wire.ChangePasswordRequest{User: user, CurrentPassword: current, NewPassword: replacement})
}

// UpdatePermissions replaces a user's permissions (nil clears them).
func (c *Client) UpdatePermissions(ctx context.Context, user wire.Identifier, permissions *wire.Permissions) error {
	return c.sendExpectEmpty(ctx, wire.UpdatePermissionsRequest{User: user, Permissions: permissions})
}

// GetPersonalAccessTokens lists the caller's tokens (empty list when none).
func (c *Client) GetPersonalAccessTokens(ctx context.Context) ([]wire.PersonalAccessToken, error) {
	payload, err := c.send(ctx, wire.EmptyRequest{Command: wire.CodeGetPersonalAccessTokens})
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodePersonalAccessTokens(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetPersonalAccessTokens, err)
	}
	return out, nil
}

// CreatePersonalAccessToken creates a token and returns its raw value. expiryMicros is the lifetime
// in microseconds; 0 = server default, wire.PATExpiryNever = never.
func (c *Client) CreatePersonalAccessToken(ctx context.Context, name string, expiryMicros uint64) (string, error) {
	payload, err := c.send(ctx, wire.CreatePersonalAccessTokenRequest{Name: name, ExpiryMicros: expiryMicros})
	if err != nil {
		return "", err
	}
	t, err := wire.DecodeRawToken(payload)
	if err != nil {
		return "", decodeErr(wire.CodeCreatePersonalAccessToken, err)
	}
	return t.Token, nil
}

// DeletePersonalAccessToken deletes one of the caller's tokens.
func (c *Client) DeletePersonalAccessToken(ctx context.Context, name string) error {
	return c.sendExpectEmpty(ctx, wire.DeletePersonalAccessTokenRequest{Name: name})
}
