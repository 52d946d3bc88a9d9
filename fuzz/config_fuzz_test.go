package fuzz

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// FuzzConfigDecodeCompile feeds bytes to the proxy as a wire config:
// DecodeConfig then Load must never panic, and a config Load accepts must
// survive a JSON round trip: it marshals, decodes strictly, loads again
// (on a fresh proxy and as a reload), and marshals to the same bytes.
//
// The seeds in testdata/fuzz/FuzzConfigDecodeCompile are named for what
// Load must do with them ("valid-…" accepted, "invalid-…" rejected);
// TestConfigSeedsBehave holds them to that.

func quietProxy() *dataplane.Proxy {
	return dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// loadConfig decodes and loads data on a fresh proxy. It returns the
// decoded config and the first error, if any.
func loadConfig(data []byte) (*proxycfg.Config, error) {
	var cfg proxycfg.Config
	if err := proxycfg.DecodeConfig(data, &cfg); err != nil {
		return nil, err
	}
	p := quietProxy()
	defer p.Close()
	return &cfg, p.Load(&cfg)
}

func FuzzConfigDecodeCompile(f *testing.F) {
	f.Add([]byte(`{"schema":"tunnelgate.dev/dataplane/v1","listeners":[],"routes":[],"clusters":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg proxycfg.Config
		if proxycfg.DecodeConfig(data, &cfg) != nil {
			return
		}
		p := quietProxy()
		defer p.Close()
		if p.Load(&cfg) != nil {
			if p.Ready() {
				t.Fatal("a rejected first config is being served")
			}
			return
		}
		b, err := json.Marshal(&cfg)
		if err != nil {
			t.Fatalf("an accepted config does not marshal: %v", err)
		}
		var again proxycfg.Config
		if err := proxycfg.DecodeConfig(b, &again); err != nil {
			t.Fatalf("an accepted config does not decode after a round trip: %v\n%s", err, b)
		}
		p2 := quietProxy()
		defer p2.Close()
		if err := p2.Load(&again); err != nil {
			t.Fatalf("an accepted config is rejected after a round trip: %v\n%s", err, b)
		}
		if err := p.Load(&again); err != nil {
			t.Fatalf("reloading an accepted config after a round trip fails: %v\n%s", err, b)
		}
		if p.Version() != cfg.Version {
			t.Fatalf("Version() = %q, want %q", p.Version(), cfg.Version)
		}
		b2, err := json.Marshal(&again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, b2) {
			t.Fatalf("the round trip is not a fixed point:\n%s\n%s", b, b2)
		}
	})
}

// readCorpusBytes reads a "go test fuzz v1" file holding one []byte value.
func readCorpusBytes(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, body, ok := strings.Cut(string(raw), "\n")
	if !ok || header != "go test fuzz v1" {
		t.Fatalf("%s: not a go test fuzz v1 file", path)
	}
	body = strings.TrimSpace(body)
	lit, ok := strings.CutPrefix(body, "[]byte(")
	if !ok || !strings.HasSuffix(lit, ")") {
		t.Fatalf("%s: want one []byte value, got %.40q", path, body)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}

func TestConfigSeedsBehave(t *testing.T) {
	files, err := filepath.Glob("testdata/fuzz/FuzzConfigDecodeCompile/*")
	if err != nil {
		t.Fatal(err)
	}
	var valid, invalid int
	for _, path := range files {
		name := filepath.Base(path)
		data := readCorpusBytes(t, path)
		_, err := loadConfig(data)
		switch {
		case strings.HasPrefix(name, "valid-"):
			valid++
			if err != nil {
				t.Errorf("%s: rejected: %v", name, err)
			}
		case strings.HasPrefix(name, "invalid-"):
			invalid++
			if err == nil {
				t.Errorf("%s: accepted", name)
			} else if strings.Contains(name, "tls") && !strings.Contains(err.Error(), "TLS") {
				t.Errorf("%s: the error does not say the TLS settings are at fault: %v", name, err)
			}
		}
	}
	if valid < 5 || invalid < 5 {
		t.Fatalf("found %d valid and %d invalid seeds; the corpus is missing", valid, invalid)
	}
}
