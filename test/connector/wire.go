package connector

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// What both ends of a tunnel connection agree on.
const (
	// handshakeTimeout bounds the hello and its answer.
	handshakeTimeout = 5 * time.Second
	// lineLimit bounds a handshake line (a token is about 200 bytes).
	lineLimit = 16 << 10
	// configHost is the authority of the edge's configuration pushes: a
	// PUT whose body is a configPush. ".invalid" never resolves (RFC 6761),
	// so no visitor's hostname can be it.
	configHost = "config.edge.invalid"
	// answerOK is the edge's answer to a hello it accepts.
	answerOK = "ok"
	// upgradeHeader: websocketUpgrade marks a stream that carries a
	// visitor's WebSocket, as cloudflared's http2 protocol marks it; the
	// stream has no Connection or Upgrade field, which HTTP/2 forbids
	// (RFC 9113, section 8.2.2).
	upgradeHeader    = "Cf-Cloudflared-Proxy-Connection-Upgrade"
	websocketUpgrade = "websocket"
)

// hello is the first line a connector sends.
type hello struct {
	Token     string `json:"token"`     // the tunnel token, as cloudflared runs with
	Connector string `json:"connector"` // a name for logs: the Pod's
}

// configPush is the body of a configuration push.
type configPush struct {
	Version int             `json:"version"`
	Config  json.RawMessage `json:"config"` // the "config" object of the Cloudflare API
}

// writeLine writes v as one line: JSON for a struct, the text for a string.
func writeLine(w io.Writer, v any) error {
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	if len(b) >= lineLimit || strings.ContainsRune(string(b), '\n') {
		return errors.New("connector: handshake line too long or multi-line")
	}
	_, err := w.Write(append(b, '\n'))
	return err
}

// readLine reads one handshake line, a byte at a time: what follows it on
// the connection is HTTP/2 and must stay unread for the HTTP/2 side.
func readLine(c net.Conn) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < lineLimit {
		if _, err := io.ReadFull(c, b); err != nil {
			return "", err
		}
		if b[0] == '\n' {
			return string(line), nil
		}
		line = append(line, b[0])
	}
	return "", fmt.Errorf("connector: handshake line longer than %d bytes", lineLimit)
}

// readHello reads a connector's hello; a bufio.Reader is safe on this side
// because the connector sends nothing more until it has the answer.
func readHello(c net.Conn) (hello, error) {
	var h hello
	line, err := bufio.NewReaderSize(io.LimitReader(c, lineLimit), 4096).ReadString('\n')
	if err != nil {
		return h, fmt.Errorf("reading the hello: %w", err)
	}
	if err := json.Unmarshal([]byte(line), &h); err != nil {
		return h, fmt.Errorf("the hello is not JSON: %w", err)
	}
	return h, nil
}
