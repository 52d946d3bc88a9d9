package connector

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/tunnelgate/tunnelgate/test/testaccess"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// echoOrigin is a TCP server on loopback that echoes every byte until
// the connection ends; accepted counts the connections it took.
type echoOrigin struct {
	addr     string
	accepted atomic.Int64
	ended    chan struct{} // one send per connection that ended
}

func startEchoOrigin(t *testing.T) *echoOrigin {
	o := &echoOrigin{ended: make(chan struct{}, 16)}
	o.addr = testnet.RawServer(t, func(c net.Conn) {
		o.accepted.Add(1)
		_, _ = io.Copy(c, c)
		o.ended <- struct{}{}
	})
	return o
}

// serveStreams runs an edge with doc and a connector that reads team
// "acme"'s keys at certsURL.
func serveStreams(t *testing.T, doc, certsURL string) *Edge {
	t.Helper()
	tun := &tunnels{}
	tun.set(doc)
	e := startEdge(t, tun)
	startConnectorOpts(t, Options{Edge: e.Addr(), Token: goodToken, Name: "c", GracePeriod: time.Second,
		AccessCerts: map[string]string{"acme": certsURL}})
	waitFor(t, "the connector registered", registered(e, "c"))
	return e
}

// echoes writes msg on s and reads it back.
func echoes(t *testing.T, s io.ReadWriter, msg string) {
	t.Helper()
	if _, err := io.WriteString(s, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(s, got); err != nil || string(got) != msg {
		t.Fatalf("read back %q, %v; want %q", got, err, msg)
	}
}

// A stream to a tcp://, ssh:// or rdp:// rule reaches its origin and
// carries bytes both ways; the visitor closing it ends the origin's
// connection, and the origin closing ends the visitor's stream.
func TestStreamToTCPOrigin(t *testing.T) {
	for _, scheme := range []string{"tcp", "ssh", "rdp"} {
		t.Run(scheme, func(t *testing.T) {
			o := startEchoOrigin(t)
			e := serveStreams(t, oneHost("db.example.com", scheme+"://"+o.addr, ""), "")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := e.Stream(ctx, "db.example.com", "")
			if err != nil {
				t.Fatal(err)
			}
			echoes(t, s, "hello over the tunnel")
			echoes(t, s, "and again")
			s.Close()
			select {
			case <-o.ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the origin's connection did not end when the visitor closed the stream")
			}
		})
	}
}

// An origin that closes its end ends the visitor's stream.
func TestStreamEndsWhenOriginCloses(t *testing.T) {
	addr := testnet.RawServer(t, func(c net.Conn) { _, _ = io.WriteString(c, "bye") })
	e := serveStreams(t, oneHost("db.example.com", "tcp://"+addr, ""), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.Stream(ctx, "db.example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := io.ReadAll(s)
	if string(got) != "bye" || err != nil {
		t.Errorf("read %q, %v; want bye, then the end", got, err)
	}
}

// A hostname no rule names gets the catch-all's answer, and an origin
// that cannot be dialled a 502, and neither opens a stream.
func TestStreamRefusedWithoutRuleOrOrigin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	e := serveStreams(t, oneHost("db.example.com", "tcp://"+closed, ""), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for host, want := range map[string]int{"other.example.com": http.StatusNotFound, "db.example.com": http.StatusBadGateway} {
		_, err := e.Stream(ctx, host, "")
		if r, ok := errors.AsType[*StreamRefused](err); !ok || r.Status != want {
			t.Errorf("stream to %s: %v; want refused with %d", host, err, want)
		}
	}
}

// With originRequest.access on the rule, the connector checks the
// stream's token before it dials the origin: none, one for another
// application and one another team signed are refused and never reach
// the origin; a valid one is relayed. A plain request to a rule with the
// check is checked alike.
func TestStreamAccessCheckedBeforeTheOrigin(t *testing.T) {
	key, other := testaccess.Key(t, "acme"), testaccess.Key(t, "other")
	certs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(testaccess.Certs(t, map[string]*rsa.PublicKey{"k1": &key.PublicKey}))
	}))
	defer certs.Close()
	token := func(signer *rsa.PrivateKey, aud string) string {
		now := time.Now()
		return testaccess.Sign(t, jose.RS256, signer, "k1", testaccess.JSON(t, map[string]any{
			"aud": []string{aud}, "iss": "https://acme.cloudflareaccess.com", "sub": "u1", "email": "a@example.com",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "type": "app",
		}), nil)
	}
	o := startEchoOrigin(t)
	const access = `{"access":{"required":true,"teamName":"acme","audTag":["aud-ssh"]}}`
	e := serveStreams(t, fmt.Sprintf(`{"ingress":[{"hostname":"ssh.example.com","service":"ssh://%s","originRequest":%s},
		{"hostname":"web.example.com","service":"http_status:204","originRequest":%[2]s},{"service":"http_status:404"}]}`, o.addr, access), certs.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, c := range map[string]struct {
		token string
		want  int
	}{
		"no token":       {"", http.StatusForbidden},
		"wrong audience": {token(key, "aud-other"), http.StatusForbidden},
		"other team key": {token(other, "aud-ssh"), http.StatusBadGateway},
		"not a token":    {"not-a-jwt", http.StatusBadGateway},
	} {
		_, err := e.Stream(ctx, "ssh.example.com", c.token)
		if r, ok := errors.AsType[*StreamRefused](err); !ok || r.Status != c.want {
			t.Errorf("%s: %v; want refused with %d", name, err, c.want)
		}
	}
	if n := o.accepted.Load(); n != 0 {
		t.Errorf("the origin took %d connections for refused streams, want none", n)
	}
	s, err := e.Stream(ctx, "ssh.example.com", token(key, "aud-ssh"))
	if err != nil {
		t.Fatalf("valid token: %v", err)
	}
	defer s.Close()
	echoes(t, s, fmt.Sprintf("SSH-2.0-%s\r\n", t.Name()))

	// The same check guards a plain request to a rule that has it.
	for tok, want := range map[string]int{"": http.StatusForbidden, token(key, "aud-ssh"): http.StatusNoContent} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://web.example.com/", nil)
		if tok != "" {
			req.Header.Set(accessJWTHeader, tok)
		}
		res, err := e.Client(5 * time.Second).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("request with token %t: %d, want %d", tok != "", res.StatusCode, want)
		}
	}
}
