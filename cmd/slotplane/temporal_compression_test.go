package main

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// frontend is a Temporal frontend that answers GetSystemInfo (what a client's Dial asks) and
// DescribeNamespace, and notes how each request arrived on the wire.
type frontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu       sync.Mutex
	payloads []*stats.InPayload
}

func (f *frontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func (f *frontend) DescribeNamespace(context.Context, *workflowservice.DescribeNamespaceRequest) (*workflowservice.DescribeNamespaceResponse, error) {
	return &workflowservice.DescribeNamespaceResponse{}, nil
}

func (f *frontend) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (f *frontend) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (f *frontend) HandleConn(context.Context, stats.ConnStats)                       {}
func (f *frontend) HandleRPC(_ context.Context, s stats.RPCStats) {
	if in, ok := s.(*stats.InPayload); ok {
		f.mu.Lock()
		f.payloads = append(f.payloads, in)
		f.mu.Unlock()
	}
}

// compressed says whether the last request reached the frontend compressed.
func (f *frontend) compressed(t *testing.T) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.payloads, "the client asked nothing")
	last := f.payloads[len(f.payloads)-1]
	return last.CompressedLength != last.Length
}

// -temporal-compression decides how the client's requests travel: none by default, gzip when
// asked, and anything else is refused before a connection is made.
func TestTemporalCompression_ReachesTheWire(t *testing.T) {
	fe := &frontend{}
	srv := grpc.NewServer(grpc.StatsHandler(fe))
	workflowservice.RegisterWorkflowServiceServer(srv, fe)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	dial := func(args ...string) bool {
		c := parseConnections(t, append([]string{"-temporal-address", l.Addr().String()}, args...)...)
		compression, err := c.temporalCompression()
		require.NoError(t, err)
		tc, err := client.Dial(client.Options{HostPort: *c.temporal, ConnectionOptions: client.ConnectionOptions{GrpcCompression: compression}})
		require.NoError(t, err)
		defer tc.Close()
		// A request with a body that gzip shrinks (Dial's own is empty).
		_, err = tc.WorkflowService().DescribeNamespace(context.Background(),
			&workflowservice.DescribeNamespaceRequest{Namespace: strings.Repeat("slotplane-", 20)})
		require.NoError(t, err)
		return fe.compressed(t)
	}
	require.False(t, dial(), "by default requests go uncompressed")
	require.True(t, dial("-temporal-compression", "gzip"), "gzip when asked")
	require.False(t, dial("-temporal-compression", "none"))

	_, err = parseConnections(t, "-temporal-compression", "zstd").temporalCompression()
	require.ErrorContains(t, err, "must be none or gzip")
	_, _, err = parseConnections(t, "-temporal-compression", "").dial()
	require.ErrorContains(t, err, "-temporal-compression", "dial refuses it before connecting")
}
