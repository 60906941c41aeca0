package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
)

// DefaultReviewTTL is how long KubeTokens and KubeAccess remember a cluster's answer when
// their TTL fields are zero. It is short, so that a revoked token or a removed RoleBinding
// stops working within seconds, yet long enough that a client sending many requests in a
// row costs the API server one review, not one per request.
const DefaultReviewTTL = 10 * time.Second

// maxCachedReviews bounds each cache. A full cache drops its expired entries, and if none
// had expired, all of them: simpler than an LRU, and at this size a refill is cheap.
const maxCachedReviews = 4096

// KubeTokens authenticates bearer tokens with the cluster: each token is sent to the API
// server in an authentication.k8s.io/v1 TokenReview, so every token the cluster accepts
// (service account tokens, OIDC, whatever its authenticators are) works here too, and
// the API needs no token file of its own.
//
// Answers are cached for TTL, both "this is user X" and "nobody holds this token", but
// never a failed review, which is tried again on the next request. The cache is keyed by
// a SHA-256 hash of the token, so no token is kept in memory. A KubeTokens is safe for
// concurrent use; use it by pointer and do not copy it once in use.
type KubeTokens struct {
	// Client creates the TokenReviews. Its identity needs the verb create on
	// tokenreviews.authentication.k8s.io (the ClusterRole system:auth-delegator has it).
	// A cached client does as well as a live one: a create always goes to the API server.
	Client client.Client
	// Audiences, if set, are the audiences a token must be issued for (at least one of
	// them). Empty means the API server's own audiences.
	Audiences []string
	// TTL is how long an answer is reused: zero means DefaultReviewTTL, a negative value
	// turns the cache off.
	TTL time.Duration

	once  sync.Once
	cache *reviewCache[[sha256.Size]byte, tokenAnswer]
}

// tokenAnswer is one TokenReview's outcome: the user, or an error wrapping ErrUnknownToken.
type tokenAnswer struct {
	user apitypes.User
	err  error
}

// Authenticate implements Authenticator. A token the cluster does not accept gives an error
// that wraps ErrUnknownToken (with the review's explanation, if it gave one); a review
// that could not be made gives any other error.
func (k *KubeTokens) Authenticate(ctx context.Context, token string) (apitypes.User, error) {
	if token == "" {
		// The API server refuses a review of an empty token as invalid; it is simply unknown.
		return apitypes.User{}, ErrUnknownToken
	}
	k.once.Do(func() { k.cache = newReviewCache[[sha256.Size]byte, tokenAnswer](maxCachedReviews) })
	key := sha256.Sum256([]byte(token))
	if a, ok := k.cache.get(key); ok {
		return a.user, a.err
	}
	a, err := k.review(ctx, token)
	if err != nil {
		return apitypes.User{}, err // not cached: the next request asks again
	}
	k.cache.put(key, a, ttlOr(k.TTL))
	return a.user, a.err
}

// review asks the API server who holds the token.
func (k *KubeTokens) review(ctx context.Context, token string) (tokenAnswer, error) {
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: k.Audiences}}
	if err := k.Client.Create(ctx, tr); err != nil {
		return tokenAnswer{}, fmt.Errorf("token review: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		if st.Error != "" {
			return tokenAnswer{err: fmt.Errorf("%w: %s", ErrUnknownToken, st.Error)}, nil
		}
		return tokenAnswer{err: ErrUnknownToken}, nil
	}
	// The API server answers with the audiences the token is valid for among those asked
	// for; if it names none of them, the token was made for someone else.
	if len(k.Audiences) > 0 && !slices.ContainsFunc(st.Audiences, func(a string) bool { return slices.Contains(k.Audiences, a) }) {
		return tokenAnswer{err: fmt.Errorf("%w: the token is not issued for the audiences %v", ErrUnknownToken, k.Audiences)}, nil
	}
	u := apitypes.User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	if len(st.User.Extra) > 0 {
		u.Extra = make(map[string][]string, len(st.User.Extra))
		for key, v := range st.User.Extra {
			u.Extra[key] = []string(v)
		}
	}
	return tokenAnswer{user: u}, nil
}

// KubeAccess authorizes with the cluster's own rules: each action is sent to the API
// server in an authorization.k8s.io/v1 SubjectAccessReview, as the verb on the resource
// of the slotplane.io group in the request's namespace. So the RBAC that governs kubectl on
// Schedulings, BatchJobs and TestBeds governs the REST API in the same way, and a user
// may do through the API exactly what the same user may do with kubectl.
//
// Decisions are cached, allowed ones for AllowedTTL and denied ones for DeniedTTL; a
// failed review is not cached. A KubeAccess is safe for concurrent use; use it by pointer
// and do not copy it once in use.
type KubeAccess struct {
	// Client creates the SubjectAccessReviews. Its identity needs the verb create on
	// subjectaccessreviews.authorization.k8s.io (the ClusterRole system:auth-delegator
	// has it).
	Client client.Client
	// AllowedTTL and DeniedTTL are how long a decision is reused: zero means
	// DefaultReviewTTL, a negative value means it is not cached.
	AllowedTTL, DeniedTTL time.Duration

	once  sync.Once
	cache *reviewCache[string, accessAnswer]
}

// accessAnswer is one SubjectAccessReview's decision.
type accessAnswer struct {
	allowed bool
	reason  string
}

// Authorize implements Authorizer. A denial's reason is the cluster's, or, when the
// cluster gives none (RBAC gives none), a sentence naming the rule that is missing. An
// error means the review could not be made.
func (k *KubeAccess) Authorize(ctx context.Context, u apitypes.User, a Action) (bool, string, error) {
	k.once.Do(func() { k.cache = newReviewCache[string, accessAnswer](maxCachedReviews) })
	key, err := json.Marshal(struct {
		U apitypes.User
		A Action
	}{u, a})
	if err != nil {
		return false, "", fmt.Errorf("access review key: %w", err) // strings and maps of strings only: cannot happen
	}
	if d, ok := k.cache.get(string(key)); ok {
		return d.allowed, d.reason, nil
	}
	d, err := k.review(ctx, u, a)
	if err != nil {
		return false, "", err
	}
	ttl := ttlOr(k.DeniedTTL)
	if d.allowed {
		ttl = ttlOr(k.AllowedTTL)
	}
	k.cache.put(string(key), d, ttl)
	return d.allowed, d.reason, nil
}

// review asks the API server whether u may do a.
func (k *KubeAccess) review(ctx context.Context, u apitypes.User, a Action) (accessAnswer, error) {
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace:   a.Namespace,
			Verb:        a.Verb,
			Group:       a.Group,
			Resource:    a.Resource,
			Subresource: a.Subresource,
			Name:        a.Name,
		},
		User:   u.Name,
		UID:    u.UID,
		Groups: u.Groups,
	}}
	if len(u.Extra) > 0 {
		sar.Spec.Extra = make(map[string]authzv1.ExtraValue, len(u.Extra))
		for key, v := range u.Extra {
			sar.Spec.Extra[key] = authzv1.ExtraValue(v)
		}
	}
	if err := k.Client.Create(ctx, sar); err != nil {
		return accessAnswer{}, fmt.Errorf("subject access review: %w", err)
	}
	st := sar.Status
	if st.Allowed {
		return accessAnswer{allowed: true}, nil
	}
	reason := st.Reason
	if st.EvaluationError != "" {
		// Typically a binding to a role that does not exist: worth showing, since it may be
		// the rule the user was meant to have.
		if reason != "" {
			reason += "; "
		}
		reason += "the cluster could not evaluate every rule: " + st.EvaluationError
	}
	if reason == "" {
		target := a.Resource
		if a.Subresource != "" {
			target += "/" + a.Subresource
		}
		group := a.Group
		if group == "" {
			group = "core"
		}
		reason = fmt.Sprintf("no RBAC rule allows it (it takes a Role or ClusterRole granting the verb %q on %q in the API group %q, bound to the user or one of its groups)",
			a.Verb, target, group)
	}
	return accessAnswer{reason: reason}, nil
}

// ttlOr is ttl, or DefaultReviewTTL for zero.
func ttlOr(ttl time.Duration) time.Duration {
	if ttl == 0 {
		return DefaultReviewTTL
	}
	return ttl
}

// reviewCache remembers answers for a while, so that repeated requests do not each cost a
// review. It holds at most limit entries: when full, it drops the expired ones, and if none
// had expired, all of them. It is safe for concurrent use.
type reviewCache[K comparable, V any] struct {
	mu      sync.Mutex
	entries map[K]cached[V]
	limit   int
	now     func() time.Time // time.Now; tests replace it
}

type cached[V any] struct {
	value   V
	expires time.Time
}

func newReviewCache[K comparable, V any](limit int) *reviewCache[K, V] {
	return &reviewCache[K, V]{entries: map[K]cached[V]{}, limit: limit, now: time.Now}
}

// get returns the value stored under key, if it has not expired.
func (c *reviewCache[K, V]) get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	if !c.now().Before(e.expires) {
		delete(c.entries, key)
		var zero V
		return zero, false
	}
	return e.value, true
}

// put stores value under key for ttl; a ttl that is not positive stores nothing.
func (c *reviewCache[K, V]) put(key K, value V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, present := c.entries[key]; !present && len(c.entries) >= c.limit {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.limit {
			clear(c.entries)
		}
	}
	c.entries[key] = cached[V]{value: value, expires: now.Add(ttl)}
}

// size is the number of entries, expired or not.
func (c *reviewCache[K, V]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
