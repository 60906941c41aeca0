package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

const bearerProtocolPrefix = "bearer."

// How the feed keeps a connection honest: a write that takes longer than writeWait closes
// it (the client stopped reading); pings every pingEvery, and a client silent for pongWait
// (no pong, no message) is gone.
const (
	writeWait = 10 * time.Second
	pingEvery = 30 * time.Second
	pongWait  = 70 * time.Second
	// socketBuffer is a feed connection's kernel send buffer. It is kept small so that the
	// in-process queue, which overflows into a RESYNC, is what absorbs a slow client, and
	// a hundred stalled clients do not pin megabytes of kernel memory each.
	socketBuffer = 64 << 10
)

// bearerFromProtocols finds a token offered as the "bearer.<token>" subprotocol.
func bearerFromProtocols(r *http.Request) string {
	for _, p := range websocket.Subprotocols(r) {
		if t, ok := strings.CutPrefix(p, bearerProtocolPrefix); ok {
			return t
		}
	}
	return ""
}

// originAllowed: no Origin (not a browser), the API's own host, or a listed origin.
func (s *server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return slices.ContainsFunc(s.AllowedOrigins, func(o string) bool { return strings.EqualFold(strings.TrimSuffix(o, "/"), origin) })
}

// watch serves the change feed: GET /api/v1/watch as a websocket, for the request's
// namespace and the ?kinds= asked (schedulings, jobs, testbeds, slotslices; default all), from
// ?resourceVersion= and ?feed= if given. Each message is one Event as JSON text.
func (s *server) watch(c *gin.Context) {
	if s.hub == nil {
		fail(c, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "this server has no change feed: it was started without a cluster to watch", Status: http.StatusServiceUnavailable})
		return
	}
	kinds := map[string]bool{}
	var resources []string
	words := strings.Split(c.DefaultQuery("kinds", "schedulings,jobs,testbeds,slotslices"), ",")
	for _, w := range words {
		k, ok := feedKinds[strings.TrimSpace(w)]
		if !ok {
			fail(c, invalid(apitypes.FieldError{Field: "kinds", Message: fmt.Sprintf("%q is not a kind the feed carries (schedulings, jobs, testbeds, slotslices)", w)}))
			return
		}
		kinds[k.kind] = true
		resources = append(resources, k.resource)
	}
	for _, res := range resources {
		a := Action{Group: v1alpha1.GroupName, Verb: "watch", Resource: res, Namespace: namespaceOf(c)}
		ok, reason, err := s.Authorizer.Authorize(c.Request.Context(), userOf(c), a)
		if err != nil {
			fail(c, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "could not check the permission to " + a.String() + ": " + err.Error(), Status: http.StatusServiceUnavailable})
			return
		}
		if !ok {
			fail(c, &apitypes.Error{Code: apitypes.CodeForbidden, Message: strings.TrimSuffix(fmt.Sprintf("user %s may not %s: %s", userOf(c).Name, a, reason), ": "), Status: http.StatusForbidden})
			return
		}
	}
	if !websocket.IsWebSocketUpgrade(c.Request) {
		fail(c, &apitypes.Error{Code: apitypes.CodeBadRequest, Message: "the change feed is a websocket: send an Upgrade: websocket request", Status: http.StatusBadRequest})
		return
	}
	if !s.originAllowed(c.Request) {
		fail(c, &apitypes.Error{Code: apitypes.CodeForbidden, Message: fmt.Sprintf("origin %s may not open the change feed (allowed: this server's own, and %v)", c.GetHeader("Origin"), s.AllowedOrigins), Status: http.StatusForbidden})
		return
	}
	if !s.hub.ready() {
		fail(c, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "the change feed is still reading the cluster; try again shortly", Status: http.StatusServiceUnavailable})
		return
	}
	from := c.Query("resourceVersion")
	if from != "" && !decimal(from) {
		fail(c, invalid(apitypes.FieldError{Field: "resourceVersion", Message: fmt.Sprintf("%.40q is not a resourceVersion: those the feed sends are decimal numbers", from)}))
		return
	}
	release, refused := s.hub.admit(userOf(c).Name)
	if refused != "" {
		c.Header("Retry-After", "10")
		fail(c, &apitypes.Error{Code: apitypes.CodeTooManyRequests, Message: refused + "; try again later", Status: http.StatusTooManyRequests})
		return
	}
	defer release()
	up := websocket.Upgrader{
		Subprotocols: []string{apitypes.Subprotocol},
		CheckOrigin:  func(*http.Request) bool { return true }, // checked above, with a JSON answer
	}
	conn, err := up.Upgrade(c.Writer, c.Request, nil)
	if err != nil {
		return // Upgrade has answered
	}
	if tc, ok := conn.NetConn().(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(socketBuffer)
	}
	fc := &feedClient{namespace: namespaceOf(c), kinds: kinds, max: s.hub.queueSize, maxBytes: s.hub.queueMaxBytes, wake: make(chan struct{}, 1)}
	first := s.hub.subscribe(fc, c.Query("feed"), from)
	defer s.hub.unsubscribe(fc)
	s.serveFeed(c.Request.Context(), conn, fc, first)
}

// serveFeed writes the client's events until it goes away or the server stops. A reader
// goroutine takes the client's pongs and close; nothing the client sends is needed.
func (s *server) serveFeed(ctx context.Context, conn *websocket.Conn, fc *feedClient, first []byte) {
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer cancel()
		conn.SetReadLimit(4096)
		_ = conn.SetReadDeadline(time.Now().Add(pongWait))
		conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
			_ = conn.SetReadDeadline(time.Now().Add(pongWait))
		}
	}()
	write := func(data []byte) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteMessage(websocket.TextMessage, data) == nil
	}
	if first != nil && !write(first) {
		return
	}
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return // the client went away
		case <-s.stopping:
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "the server is stopping"), time.Now().Add(time.Second))
			return
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				return
			}
		case <-fc.wake:
			batch, lost := fc.take()
			if lost {
				if !write(s.hub.resync(fc, fc.lostWhy())) {
					return
				}
				continue
			}
			for _, data := range batch {
				if !write(data) {
					return
				}
			}
		}
	}
}

// decimal says whether v is a non-negative decimal number of at most 20 digits, as the
// resourceVersions the feed sends are.
func decimal(v string) bool {
	if len(v) == 0 || len(v) > 20 {
		return false
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
