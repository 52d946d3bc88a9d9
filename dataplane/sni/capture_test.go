// This file implements the tests on real ClientHellos: captured from
// crypto/tls clients and from openssl s_client, read by Read and by
// crypto/tls's server alike.

package sni

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rawHello reads records from r until they hold a whole handshake
// message, and returns the bytes read. It is the tests' own record
// reader, sharing nothing with Read.
func rawHello(r io.Reader) ([]byte, error) {
	var raw, hs []byte
	for len(hs) < 4 || len(hs) < 4+(int(hs[1])<<16|int(hs[2])<<8|int(hs[3])) {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return raw, err
		}
		payload := make([]byte, int(hdr[3])<<8|int(hdr[4]))
		if _, err := io.ReadFull(r, payload); err != nil {
			return raw, err
		}
		raw = append(append(raw, hdr...), payload...)
		hs = append(hs, payload...)
	}
	return raw, nil
}

// captureGo returns the ClientHello a crypto/tls client with cfg sends.
func captureGo(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tls.Client(client, cfg).Handshake()
	}()
	raw, err := rawHello(server)
	server.Close()
	<-done
	client.Close()
	if err != nil {
		t.Fatalf("capturing the hello: %v", err)
	}
	return raw
}

// goClient is one crypto/tls client configuration and what its hello
// must say.
type goClient struct {
	name string
	cfg  *tls.Config
	want Hello
}

func goClients(t testing.TB) []goClient {
	cs := []goClient{
		{"tls13 sni alpn", &tls.Config{ServerName: "www.example.com", NextProtos: []string{"h2", "http/1.1"}},
			Hello{ServerName: "www.example.com", ALPN: []string{"h2", "http/1.1"}}},
		{"tls13 only", &tls.Config{ServerName: "a.example", MinVersion: tls.VersionTLS13}, Hello{ServerName: "a.example"}},
		{"tls12 only", &tls.Config{ServerName: "b.example", MaxVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}},
			Hello{ServerName: "b.example", ALPN: []string{"http/1.1"}}},
		{"tls10 to 12", &tls.Config{ServerName: "c.example", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS12},
			Hello{ServerName: "c.example"}},
		{"no sni", &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}, Hello{ALPN: []string{"h2"}}},
		{"ip address: no sni", &tls.Config{ServerName: "127.0.0.1"}, Hello{}},
		{"trailing dot dropped", &tls.Config{ServerName: "d.example."}, Hello{ServerName: "d.example"}},
		{"case kept", &tls.Config{ServerName: "MiXeD.Example"}, Hello{ServerName: "MiXeD.Example"}},
		{"long name", &tls.Config{ServerName: strings.Repeat("l", 63) + "." + strings.Repeat("m", 63) + ".example"},
			Hello{ServerName: strings.Repeat("l", 63) + "." + strings.Repeat("m", 63) + ".example"}},
		{"many protocols", &tls.Config{ServerName: "e.example", NextProtos: []string{"h3", "h2", "http/1.1", "acme-tls/1", "x"}},
			Hello{ServerName: "e.example", ALPN: []string{"h3", "h2", "http/1.1", "acme-tls/1", "x"}}},
	}
	// Encrypted Client Hello: the outer hello names the public name.
	cs = append(cs, goClient{"ech outer name", &tls.Config{
		ServerName:                     "secret.example",
		MinVersion:                     tls.VersionTLS13,
		EncryptedClientHelloConfigList: echConfigList(t, "public.example"),
		NextProtos:                     []string{"h2"},
	}, Hello{ServerName: "public.example", ALPN: []string{"h2"}}})
	return cs
}

// echConfigList is an ECHConfigList (draft-ietf-tls-esni, version
// 0xfe0d) with one X25519/HKDF-SHA256/AES-128-GCM config for publicName.
func echConfigList(t testing.TB, publicName string) []byte {
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	contents := cat(
		u8(1),                         // config_id
		u16(0x0020),                   // kem_id: DHKEM(X25519, HKDF-SHA256)
		v16(key.PublicKey().Bytes()),  // public_key
		v16(u16(0x0001), u16(0x0001)), // cipher_suites: HKDF-SHA256, AES-128-GCM
		u8(0),                         // maximum_name_length
		v8([]byte(publicName)),        // public_name
		v16(),                         // extensions
	)
	return v16(u16(0xfe0d), v16(contents))
}

// TestGoClients: the hellos of crypto/tls clients, in each
// configuration, read as crypto/tls's server reads them.
func TestGoClients(t *testing.T) {
	for _, c := range goClients(t) {
		t.Run(c.name, func(t *testing.T) {
			in := captureGo(t, c.cfg)
			if c.cfg.EncryptedClientHelloConfigList != nil && !bytes.Contains(in, []byte{0xfe, 0x0d}) {
				t.Fatal("the client sent no encrypted_client_hello extension")
			}
			checkReal(t, in, c.want)
		})
	}
}

// checkReal reads a captured hello whole and one byte at a time, and
// compares with crypto/tls's server.
func checkReal(t *testing.T, in []byte, want Hello) {
	t.Helper()
	for _, rd := range readers {
		h, got, err := Read(rd.wrap(bytes.NewReader(in)), nil, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", rd.name, err)
		}
		if !bytes.Equal(got, in) {
			t.Errorf("%s: the bytes returned are not those sent", rd.name)
		}
		if h.ServerName != want.ServerName || !slices.Equal(h.ALPN, want.ALPN) {
			t.Errorf("%s: got %+v, want %+v", rd.name, h, want)
		}
	}
	ref := reference(in)
	if !ref.parsed || ref.serverName != want.ServerName || !slices.Equal(ref.alpn, want.ALPN) {
		t.Errorf("crypto/tls made %+v of it, want %+v", ref, want)
	}
}

// opensslCase is one openssl s_client command line and what its hello
// must say.
type opensslCase struct {
	name string
	args []string
	want Hello
}

var opensslCases = []opensslCase{
	{"sni alpn", []string{"-servername", "x.example", "-alpn", "h2,http/1.1"}, Hello{ServerName: "x.example", ALPN: []string{"h2", "http/1.1"}}},
	{"tls12", []string{"-tls1_2", "-servername", "y.example", "-alpn", "http/1.1"}, Hello{ServerName: "y.example", ALPN: []string{"http/1.1"}}},
	{"tls13", []string{"-tls1_3", "-servername", "z.example"}, Hello{ServerName: "z.example"}},
	{"no sni", []string{"-noservername", "-alpn", "h2"}, Hello{ALPN: []string{"h2"}}},
	{"uppercase", []string{"-servername", "UPPER.Example"}, Hello{ServerName: "UPPER.Example"}},
}

// captureOpenSSL runs openssl s_client with args against a loopback
// listener that records its hello and closes.
func captureOpenSSL(t *testing.T, args []string) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openssl", append([]string{"s_client", "-connect", ln.Addr().String()}, args...)...)
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	raw, err := rawHello(c)
	if err != nil {
		t.Fatalf("capturing openssl's hello: %v\n%s", err, out.String())
	}
	return raw
}

// TestOpenSSLClients: the hellos of openssl s_client, read as crypto/tls
// reads them. Their captures are seeds of FuzzRead, in testdata/fuzz.
func TestOpenSSLClients(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl binary to run s_client:", err)
	}
	for _, c := range opensslCases {
		t.Run(c.name, func(t *testing.T) {
			in := captureOpenSSL(t, c.args)
			checkReal(t, in, c.want)
			if os.Getenv("SNI_WRITE_SEEDS") != "" {
				writeSeed(t, "openssl-"+strings.ReplaceAll(c.name, " ", "-"), in)
			}
		})
	}
}

// writeSeed writes in to FuzzRead's seed corpus, in go test's corpus
// format.
func writeSeed(t *testing.T, name string, in []byte) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
