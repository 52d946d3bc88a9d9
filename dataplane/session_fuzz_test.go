package dataplane

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Session token targets. They use the codec's Encode and Decode only: a
// token is accepted by (key, scope) exactly when it is what Encode with
// that key and scope makes of the decoded values, byte for byte.

// The keys and scopes FuzzSessionDecode checks every input against. The
// seed corpus (testdata/fuzz/FuzzSessionDecode) holds tokens made with
// sessFuzzKeys[0] and sessFuzzScopes[0], so that the fuzzer starts from
// accepted tokens and mutates them.
var (
	sessFuzzKeys = [][]byte{
		[]byte("tunnelgate fuzz key 0123456789ab"),
		[]byte("tunnelgate fuzz key 0123456789ac"),
		[]byte("short"),
		nil,
	}
	sessFuzzScopes = []string{"default/web/rule0|tg-session", "default/web/rule1|tg-session", ""}
	sessFuzzT0     = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
)

var sessFuzzCodecs = func() []*sessionCodec {
	cs := make([]*sessionCodec, len(sessFuzzKeys))
	for i, k := range sessFuzzKeys {
		cs[i] = newSessionCodec(k)
	}
	return cs
}()

func sessValidChars(tok []byte) bool {
	for _, b := range tok {
		if !('A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}

// FuzzSessionDecode feeds arbitrary tokens to Decode under several keys and
// scopes: it must not panic, must refuse anything longer than
// maxSessionTokenLen, and may accept a token only if re-encoding what it
// returned under the same key and scope gives the token back exactly. So
// no mutation of a valid token (padding, line breaks, non-canonical
// trailing bits, another scope's MAC) gets through.
func FuzzSessionDecode(f *testing.F) {
	c := sessFuzzCodecs[0]
	for _, ep := range []string{"10.0.0.7:8080", "[fd00::7]:443", "x", strings.Repeat("e", maxSessionEndpointLen)} {
		tok := string(c.Encode(nil, sessFuzzScopes[0], ep, sessFuzzT0, sessFuzzT0.Add(time.Minute)))
		f.Add(tok)
		f.Add(tok + "=")
		f.Add(tok[:len(tok)-1])
		f.Add(tok[:5] + "\n" + tok[5:])
	}
	f.Add("")
	f.Add("A")
	f.Add(strings.Repeat("A", maxSessionTokenLen+1))
	f.Fuzz(func(t *testing.T, token string) {
		for ki, c := range sessFuzzCodecs {
			for si, scope := range sessFuzzScopes {
				ep, start, last, ok := c.Decode(token, scope)
				if !ok {
					if ep != "" || !start.IsZero() || !last.IsZero() {
						t.Fatalf("key %d scope %d: refused token but returned %q %v %v", ki, si, ep, start, last)
					}
					continue
				}
				if len(token) > maxSessionTokenLen {
					t.Fatalf("key %d scope %d: accepted a %d-byte token", ki, si, len(token))
				}
				again := c.Encode(nil, scope, ep, start, last)
				if string(again) != token {
					t.Fatalf("key %d scope %d: accepted %q, which Encode does not make (it makes %q of %q %v %v)", ki, si, token, again, ep, start, last)
				}
			}
		}
	})
}

// FuzzSessionRoundTrip checks that whatever Encode makes Decode gives
// back, for any key, scope, endpoint and times; that the token is
// cookie-safe and within maxSessionTokenLen; that Encode appends; and that
// another scope or key refuses it.
func FuzzSessionRoundTrip(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), "ns/r/0|s", "10.0.0.7:8080", int64(1735787045), int64(1735787105))
	f.Add([]byte{}, "", "x", int64(0), int64(0))
	f.Add([]byte("k"), "scope", "", int64(-1), int64(1<<62))
	f.Add([]byte(strings.Repeat("K", 100)), strings.Repeat("s", 1000), strings.Repeat("e", 351), int64(-1<<63), int64(1<<63-1))
	f.Add([]byte("0123456789abcdef"), "a", strings.Repeat("e", 352), int64(5), int64(5))
	f.Fuzz(func(t *testing.T, key []byte, scope, endpoint string, startMs, lastMs int64) {
		c := newSessionCodec(key)
		prefix := []byte("tg=")
		out := c.Encode(prefix, scope, endpoint, time.UnixMilli(startMs), time.UnixMilli(lastMs))
		if !bytes.HasPrefix(out, prefix) {
			t.Fatalf("Encode did not append to dst: %q", out)
		}
		tok := out[len(prefix):]
		if endpoint == "" || len(endpoint) > maxSessionEndpointLen {
			if len(tok) != 0 {
				t.Fatalf("Encode carried a %d-byte endpoint", len(endpoint))
			}
			return
		}
		if len(tok) == 0 || len(tok) > maxSessionTokenLen || !sessValidChars(tok) {
			t.Fatalf("token %q: empty, too long or not URL-safe base64", tok)
		}
		ep, start, last, ok := c.Decode(string(tok), scope)
		if !ok || ep != endpoint || start.UnixMilli() != startMs || last.UnixMilli() != lastMs {
			t.Fatalf("Decode(Encode(%q, %d, %d)) = %q, %d, %d, %v", endpoint, startMs, lastMs, ep, start.UnixMilli(), last.UnixMilli(), ok)
		}
		if string(c.Encode(nil, scope, endpoint, time.UnixMilli(startMs), time.UnixMilli(lastMs))) != string(tok) {
			t.Fatal("Encode is not deterministic")
		}
		if _, _, _, ok := c.Decode(string(tok), scope+"\x00"); ok {
			t.Fatal("token accepted for a longer scope")
		}
		if scope != "" {
			if _, _, _, ok := c.Decode(string(tok), scope[:len(scope)-1]); ok {
				t.Fatal("token accepted for a shorter scope")
			}
		}
		other := append([]byte(nil), key...)
		if len(other) == 0 {
			other = []byte("x")
		} else {
			other[len(other)-1] ^= 0x01
		}
		if _, _, _, ok := newSessionCodec(other).Decode(string(tok), scope); ok {
			t.Fatal("token accepted under another key")
		}
	})
}

var updateSessionSeeds = flag.Bool("update-session-seeds", false, "rewrite testdata/fuzz/FuzzSessionDecode from sessionSeeds")

// sessionSeeds are the seed corpus of FuzzSessionDecode: tokens of the
// fuzz keys and scopes (valid-*), and spellings of one of them that must
// be refused. `go test ./dataplane -run TestSessionDecodeSeeds -args
// -update-session-seeds` writes them again after a change of format.
func sessionSeeds() map[string]string {
	enc := func(key, scope int, ep string) string {
		return string(sessFuzzCodecs[key].Encode(nil, sessFuzzScopes[scope], ep, sessFuzzT0, sessFuzzT0.Add(time.Minute)))
	}
	v4 := enc(0, 0, "10.0.0.7:8080")
	last := strings.IndexByte(sessAlphabet, v4[len(v4)-1])
	return map[string]string{
		"valid-ipv4":         v4,
		"valid-ipv6":         enc(0, 0, "[fd00::7]:443"),
		"valid-dns":          enc(0, 0, "web.default.svc.cluster.local:8080"),
		"valid-max-endpoint": enc(0, 0, strings.Repeat("e", maxSessionEndpointLen)),
		"valid-other-key":    enc(1, 0, "10.0.0.7:8080"),
		"valid-other-scope":  enc(0, 1, "10.0.0.7:8080"),
		"valid-empty-scope":  enc(0, 2, "10.0.0.7:8080"),
		"valid-short-key":    enc(2, 0, "10.0.0.7:8080"),
		"crlf-end":           v4 + "\r\n",
		"len-mod4-1":         v4 + "A",
		"newline":            v4[:8] + "\n" + v4[8:],
		// The last character carries bits past the payload; one more sets
		// them, which only a lax decoder accepts.
		"noncanonical-last-char": v4[:len(v4)-1] + string(sessAlphabet[last+1]),
		"padded":                 v4 + "==",
		"quoted":                 `"` + v4 + `"`,
		"std-alphabet":           v4 + "+/",
		"truncated":              v4[:len(v4)-3],
		"empty":                  "",
		"too-long":               strings.Repeat("A", maxSessionTokenLen+4),
	}
}

// sessAlphabet is URL-safe base64's alphabet, in value order.
const sessAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func writeSessionSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzSessionDecode")
	old, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range old {
		os.Remove(f)
	}
	for name, tok := range sessionSeeds() {
		data := "go test fuzz v1\nstring(" + strconv.Quote(tok) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSessionDecodeSeeds keeps the seed corpus honest: every seed named
// valid-* must be accepted under one of the fuzz keys and scopes (if the
// token format changes, regenerate them), and every other seed refused
// under all of them.
func TestSessionDecodeSeeds(t *testing.T) {
	if *updateSessionSeeds {
		writeSessionSeeds(t)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzSessionDecode", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no seeds: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "string(") || !strings.HasSuffix(lines[1], ")") {
			t.Fatalf("%s: not a one-string corpus file", file)
		}
		token, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		accepted := 0
		for _, c := range sessFuzzCodecs {
			for _, scope := range sessFuzzScopes {
				if _, _, _, ok := c.Decode(token, scope); ok {
					accepted++
				}
			}
		}
		valid := strings.HasPrefix(filepath.Base(file), "valid-")
		if valid && accepted != 1 || !valid && accepted != 0 {
			t.Errorf("%s: accepted under %d key/scope pairs", filepath.Base(file), accepted)
		}
	}
}
