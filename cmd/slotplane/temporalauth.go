package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// watched is a value read from files and read again whenever one of them changes (its
// modification time or size): the secrets a platform rotates under a running process, as a
// Kubernetes Secret's volume does by swapping a symlink. A read that fails (a rotation caught
// half written) keeps the last good value, logs why, and is tried again at the next use.
type watched[T any] struct {
	what  string
	paths []string
	load  func() (T, error)

	mu    sync.Mutex
	stamp string
	value T
	ok    bool
}

// get is the value as of the files now.
func (w *watched[T]) get() (T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	stamp, err := w.stampNow()
	if err == nil && w.ok && stamp == w.stamp {
		return w.value, nil
	}
	var v T
	if err == nil {
		v, err = w.load()
	}
	if err != nil {
		if w.ok {
			slog.Warn("keeping the last good "+w.what+": its files do not read now", "files", w.paths, "err", err)
			return w.value, nil
		}
		return v, err
	}
	if w.ok {
		slog.Info("read the "+w.what+" again: its files changed", "files", w.paths)
	}
	w.stamp, w.value, w.ok = stamp, v, true
	return v, nil
}

func (w *watched[T]) stampNow() (string, error) {
	var b strings.Builder
	for _, p := range w.paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return b.String(), nil
}

// clientCertificate is the TLS client certificate of certFile and keyFile, read again when
// either changes: each new connection to Temporal presents the files' certificate of the
// moment. It fails now if the files do not hold a pair.
func clientCertificate(certFile, keyFile string) (func(*tls.CertificateRequestInfo) (*tls.Certificate, error), error) {
	w := &watched[*tls.Certificate]{what: "Temporal client certificate", paths: []string{certFile, keyFile}, load: func() (*tls.Certificate, error) {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		return &pair, err
	}}
	if _, err := w.get(); err != nil {
		return nil, fmt.Errorf("temporal client certificate: %w", err)
	}
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return w.get() }, nil
}

// apiKey is the Temporal API key in file (surrounding white space dropped), read again when
// the file changes: every request carries the key of the moment. It fails now if the file
// does not read or is empty.
func apiKey(file string) (func(context.Context) (string, error), error) {
	w := &watched[string]{what: "Temporal API key", paths: []string{file}, load: func() (string, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return "", errors.New(file + " is empty")
		}
		return key, nil
	}}
	if _, err := w.get(); err != nil {
		return nil, fmt.Errorf("-temporal-api-key-file: %w", err)
	}
	return func(context.Context) (string, error) { return w.get() }, nil
}
