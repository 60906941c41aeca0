package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServeProfiles_ServesPprofUntilStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at, err := serveProfiles(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + at.String()

	get := func(path string) (int, string, error) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	code, body, err := get("/debug/pprof/")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
	code, body, err = get("/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "serveProfiles", "the goroutine profile is this process's")
	code, _, err = get("/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "only profiles are served here")

	cancel()
	require.Eventually(t, func() bool {
		_, _, err := get("/debug/pprof/")
		return err != nil
	}, 5*time.Second, 20*time.Millisecond, "the endpoint closes with its context")
}

func TestServeProfiles_OffUnlessGivenAnAddress(t *testing.T) {
	at, err := serveProfiles(context.Background(), "")
	require.NoError(t, err)
	require.Nil(t, at)

	_, err = serveProfiles(context.Background(), "not-an-address")
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "pprof"), err.Error())
}

func TestParseExtenderFlags_PprofIsOffByDefault(t *testing.T) {
	t.Setenv("SLOTPLANE_PPROF_LISTEN", "")
	f, err := parseExtenderFlags([]string{"-plain-http"})
	require.NoError(t, err)
	require.Empty(t, f.pprof)
	f, err = parseExtenderFlags([]string{"-plain-http", "-pprof-listen", "127.0.0.1:6060"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:6060", f.pprof)
}
