package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"
	"k8s.io/apimachinery/pkg/util/validation"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// allows says whether a scope's list names name, or anyone ("*").
func allows(list []string, name string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, name)
}

// TokenScopes authorizes token-file users by their tokens' scopes: slotplane's resources in
// the token's namespaces (a request over all namespaces needs "*"), and impersonate on
// users and groups for the names the token may act as. A user without a scope may do
// nothing.
type TokenScopes struct{}

// Authorize implements Authorizer.
func (TokenScopes) Authorize(_ context.Context, u apitypes.User, a Action) (bool, string, error) {
	sc := u.Scope
	if sc == nil {
		return false, "the token has no scope", nil
	}
	if a.Verb == "impersonate" && a.Group == "" {
		switch a.Resource {
		case "users":
			if allows(sc.ActAs, a.Name) {
				return true, "", nil
			}
			return false, "the token may act as " + listOrNobody(sc.ActAs) + " (token file option act-as)", nil
		case "groups":
			if allows(sc.ActAsGroups, a.Name) {
				return true, "", nil
			}
			return false, "the token may act as groups " + listOrNobody(sc.ActAsGroups) + " (token file option act-as-groups)", nil
		}
		return false, "", nil
	}
	if a.Group != v1alpha1.GroupName {
		return false, "", nil
	}
	if (a.Namespace == "" && slices.Contains(sc.Namespaces, "*")) || (a.Namespace != "" && allows(sc.Namespaces, a.Namespace)) {
		return true, "", nil
	}
	return false, "the token acts in namespaces " + listOrNobody(sc.Namespaces) + " (token file option namespaces)", nil
}

func listOrNobody(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, " ")
}

// Action is what a request does, in Kubernetes' terms (a verb on a resource of an API
// group), so that an Authorizer can ask the cluster whether the user may. Routes act on
// slotplane.io's resources; submitting a job for someone else is "impersonate" on users or
// groups of the core group (""), as Kubernetes itself names it.
type Action struct {
	Group       string `json:"group"`
	Verb        string `json:"verb"`     // get, list, watch, create, update, delete, impersonate
	Resource    string `json:"resource"` // schedulings, batchjobs, testbeds; users, groups
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name,omitempty"`
}

func (a Action) String() string {
	s := a.Verb + " " + a.Resource
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Namespace == "" {
		return s
	}
	return s + " in namespace " + a.Namespace
}

// Authorizer decides whether a user may do an action. A refusal carries the reason the
// 403 shows; an error means it could not decide (503).
type Authorizer interface {
	Authorize(ctx context.Context, u apitypes.User, a Action) (allowed bool, reason string, err error)
}

// AllowAll lets every authenticated user do everything: the local platform's choice, where
// the one token is the operator's. Queue ACLs still apply.
type AllowAll struct{}

// Authorize implements Authorizer.
func (AllowAll) Authorize(context.Context, apitypes.User, Action) (bool, string, error) {
	return true, "", nil
}

// authorize lets the request through if the Authorizer allows the action on the object the
// path names (the namespace is the request's).
func authorize(z Authorizer, verb, resource, subresource string) gin.HandlerFunc {
	return func(c *gin.Context) {
		a := Action{Group: v1alpha1.GroupName, Verb: verb, Resource: resource, Subresource: subresource, Namespace: namespaceOf(c), Name: c.Param("name")}
		ok, reason, err := z.Authorize(c.Request.Context(), userOf(c), a)
		switch {
		case err != nil:
			fail(c, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "could not check the permission to " + a.String() + ": " + err.Error(), Status: http.StatusServiceUnavailable})
		case !ok:
			msg := fmt.Sprintf("user %s may not %s", userOf(c).Name, a)
			if reason != "" {
				msg += ": " + reason
			}
			fail(c, &apitypes.Error{Code: apitypes.CodeForbidden, Message: msg, Status: http.StatusForbidden})
		default:
			c.Next()
		}
	}
}

// Authenticator tells who holds a bearer token. ErrUnknownToken means nobody does; any other
// error means it could not be checked (the answer is then 503, not 401).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (apitypes.User, error)
}

// ErrUnknownToken is an Authenticator's answer for a token it did not issue.
var ErrUnknownToken = errors.New("the bearer token is not known")

// StaticTokens authenticates a fixed set of tokens: `slotplane dev` prints its generated
// one. Tokens are compared in constant time.
type StaticTokens map[string]apitypes.User

// Authenticate implements Authenticator.
func (s StaticTokens) Authenticate(_ context.Context, token string) (apitypes.User, error) {
	found, user := false, apitypes.User{}
	for t, u := range s {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			found, user = true, u
		}
	}
	if !found {
		return apitypes.User{}, ErrUnknownToken
	}
	return user, nil
}

// NewToken makes a random token of 32 bytes, hex-encoded.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

const userKey = "slotplane.user"

// authenticate lets through only requests with a bearer token the Authenticator knows, and
// records the user for the handlers.
func authenticate(a Authenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.GetHeader("Authorization")
		token, ok := strings.CutPrefix(h, "Bearer ")
		if h == "" && websocket.IsWebSocketUpgrade(c.Request) {
			token = bearerFromProtocols(c.Request)
			ok = token != ""
		}
		if !ok || strings.TrimSpace(token) == "" {
			c.Header("WWW-Authenticate", `Bearer realm="slotplane"`)
			msg := "no bearer token: send the header Authorization: Bearer <token> (a browser's websocket: the subprotocol bearer.<token>)"
			if h != "" {
				msg = "the Authorization header is not of the form Bearer <token>"
			}
			fail(c, &apitypes.Error{Code: apitypes.CodeUnauthorized, Message: msg, Status: http.StatusUnauthorized})
			return
		}
		user, err := a.Authenticate(c.Request.Context(), strings.TrimSpace(token))
		switch {
		case errors.Is(err, ErrUnknownToken):
			c.Header("WWW-Authenticate", `Bearer realm="slotplane", error="invalid_token"`)
			fail(c, &apitypes.Error{Code: apitypes.CodeUnauthorized, Message: err.Error(), Status: http.StatusUnauthorized})
			return
		case err != nil:
			fail(c, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "could not check the bearer token: " + err.Error(), Status: http.StatusServiceUnavailable})
			return
		}
		c.Set(userKey, user)
		c.Next()
	}
}

// userOf is the authenticated user of a request.
func userOf(c *gin.Context) apitypes.User {
	u, _ := c.Get(userKey)
	user, _ := u.(apitypes.User)
	return user
}

// ParseTokens reads a token file: one token per line as CSV,
// "token,user[,group...][,option=value...]". Blank lines and lines starting with # are
// skipped. The options scope the token (TokenScope), each value a list separated by spaces:
//
//	namespaces=team-a team-b   the namespaces it acts in ("*": all; the default)
//	act-as=alice bob           users it may submit and claim jobs for ("*": anyone; default none)
//	act-as-groups=analysts     groups it may name for them ("*": any; default none)
//
// A token used twice, a line without a user, or an unknown option is an error naming the line.
func ParseTokens(r io.Reader) (StaticTokens, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord, cr.Comment, cr.TrimLeadingSpace = -1, '#', true
	out := StaticTokens{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 2 || strings.TrimSpace(rec[0]) == "" || strings.TrimSpace(rec[1]) == "" {
			return nil, fmt.Errorf("token file line %d: want token,user[,group...][,option=value...]", line)
		}
		token := strings.TrimSpace(rec[0])
		if _, dup := out[token]; dup {
			return nil, fmt.Errorf("token file line %d: the token is listed twice", line)
		}
		u := apitypes.User{Name: strings.TrimSpace(rec[1]), Scope: &apitypes.TokenScope{Namespaces: []string{"*"}}}
		for _, g := range rec[2:] {
			g = strings.TrimSpace(g)
			key, value, isOption := strings.Cut(g, "=")
			switch {
			case g == "":
			case !isOption:
				u.Groups = append(u.Groups, g)
			case key == "namespaces":
				u.Scope.Namespaces = strings.Fields(value)
				for _, ns := range u.Scope.Namespaces {
					if errs := validation.IsDNS1123Label(ns); ns != "*" && len(errs) > 0 {
						return nil, fmt.Errorf("token file line %d: namespaces: %q is not a namespace name", line, ns)
					}
				}
			case key == "act-as":
				u.Scope.ActAs = strings.Fields(value)
			case key == "act-as-groups":
				u.Scope.ActAsGroups = strings.Fields(value)
			default:
				return nil, fmt.Errorf("token file line %d: unknown option %q (known: namespaces, act-as, act-as-groups)", line, key)
			}
		}
		out[token] = u
	}
	if len(out) == 0 {
		return nil, errors.New("token file: no tokens")
	}
	return out, nil
}
