// This file implements the reference the tests hold Read to: crypto/tls's
// own server, fed the same bytes, up to the point where it has parsed a
// ClientHello and asks GetConfigForClient for a config.

package sni

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strings"
	"time"
)

// refResult is what crypto/tls's server made of some bytes.
type refResult struct {
	parsed     bool // it reached GetConfigForClient
	serverName string
	alpn       []string
	err        error // its handshake error
}

var errStop = errors.New("stop: the hello is parsed")

// reference runs in through a crypto/tls server over an in-memory
// connection that ends after in.
func reference(in []byte) refResult {
	var res refResult
	cfg := &tls.Config{
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			res.parsed = true
			res.serverName = chi.ServerName
			res.alpn = slices.Clone(chi.SupportedProtos)
			return nil, errStop
		},
	}
	res.err = tls.Server(&memConn{r: bytes.NewReader(in)}, cfg).Handshake()
	return res
}

// memConn is a net.Conn whose reads come from r and whose writes go
// nowhere.
type memConn struct{ r *bytes.Reader }

func (c *memConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *memConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// refLimits are crypto/tls's own bounds, so that comparisons with it do
// not trip on ours: a 64 KiB hello, no bound on records.
var refLimits = Limits{MaxHello: 65536, MaxRecords: 1 << 20, MaxBytes: 1 << 24}

// stricter reports whether err is one of the refusals where Read is
// stricter than crypto/tls by design (the package doc's list).
func stricter(err error) bool {
	var fe *formatError
	if !errors.As(err, &fe) {
		return false
	}
	switch fe.field {
	case "record version", "legacy_session_id":
		return true
	case "record type":
		// crypto/tls drops warning alerts before the hello, and between
		// its fragments.
		return strings.HasPrefix(fe.detail, "alert record ")
	case "cipher_suites", "legacy_compression_methods":
		return fe.detail == "empty"
	}
	return false
}
