// Package cli holds the verbs of the slotplane command: submit, get and watch, which talk
// to the REST API as a user does, and queues, simulate and load. Each verb takes its
// settings already parsed and writes to the writer it is given. cmd/slotplane owns the
// flags, yet the errors here name them, since the user knows the settings by their flags.
// Package render prints what the verbs found.
package cli

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"slotplane/apiclient"
)

// Connection names the REST API a verb calls and how: the bearer token and the namespace.
type Connection struct {
	// Server is the API's address, http://host:port.
	Server string
	// Token is the bearer token; `slotplane dev` prints one.
	Token string
	// Namespace is where requests that name none go; empty leaves it to the API's default.
	Namespace string
}

// Client makes the API client of the connection. Without a token it says where one comes
// from rather than letting every call be refused.
func (c Connection) Client() (*apiclient.Client, error) {
	if c.Token == "" {
		return nil, errors.New("no API token: pass -token or set SLOTPLANE_TOKEN (`slotplane dev` prints its token, and keeps it in its state directory's api-token file)")
	}
	return apiclient.New(c.Server, c.Token, apiclient.WithNamespace(c.Namespace))
}

// userError is an error rewritten for a person; the original stays reachable, so callers
// can still ask errors.Is and errors.As about it.
type userError struct {
	msg string
	err error
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.err }

// explain rewrites an error of the API client for a person: the API's message, each
// field at fault on a line of its own, and a hint for the usual mistakes (a wrong token,
// a server that is not running). Other errors pass unchanged.
func explain(err error, server string) error {
	var se *apiclient.StatusError
	var op *net.OpError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		var b strings.Builder
		b.WriteString(se.API.Message)
		for _, f := range se.API.Fields {
			if line := f.Field + ": " + f.Message; line != se.API.Message {
				b.WriteString("\n    " + line)
			}
		}
		if se.Status == 401 {
			b.WriteString("\n(the API at " + server + " does not accept the token: check -token or SLOTPLANE_TOKEN)")
		}
		return &userError{msg: b.String(), err: err}
	case errors.As(err, &op) && op.Op == "dial":
		return &userError{msg: fmt.Sprintf("cannot reach the API at %s: %v (is it running? -server or SLOTPLANE_SERVER names it)", server, op.Err), err: err}
	}
	return err
}
