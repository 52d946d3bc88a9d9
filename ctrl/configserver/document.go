// This file implements a published version's bytes, around the Encoder's
// JSON.

package configserver

import (
	"encoding/json"
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// document is one published version: the JSON of a configwatch.Document,
// in pieces until first asked for. It is immutable once built, so every
// watcher is sent the same bytes without a copy.
type document struct {
	version, routesHash, clustersHash string
	// The JSON is head, listeners, `,"routes":`, routes, `,"clusters":`,
	// clusters, tail. The lists' elements are the Encoder's own, shared
	// with later versions that did not change them; nothing writes to
	// them.
	head                        []byte
	listeners, routes, clusters proxycfg.JSONList
	tail                        []byte
	size                        int
	// teams are the domains of the config's Access teams, whose keys
	// its proxies may ask to have fetched again (unknownkeys.go).
	teams []string

	// enc and small are what deltas to this version are made of: the
	// Encoder's output, and the config's fields outside its lists.
	enc    proxycfg.Encoded
	small  *proxycfg.Config
	deltas deltas

	bodyOnce sync.Once
	body     []byte
	gzipOnce sync.Once
	gz       []byte
}

const (
	routesKey   = `,"routes":`
	clustersKey = `,"clusters":`
)

// encodeDocument encodes cfg with e, which remembers the configs it
// encoded before, and assembles the document.
func encodeDocument(e *proxycfg.Encoder, cfg *proxycfg.Config) (*document, error) {
	enc, err := e.Encode(cfg)
	if err != nil {
		return nil, err
	}
	return newDocument(enc, cfg)
}

// newDocument assembles the document around the JSON of the config's
// lists, as the Encoder left it. It writes what json.Marshal would write
// for a configwatch.Document holding cfg with Version set (a test holds it
// to that), without encoding the lists again.
func newDocument(enc proxycfg.Encoded, cfg *proxycfg.Config) (*document, error) {
	head, err := appendEnvelopeHead(nil, enc.Version, enc.RoutesHash, enc.ClustersHash)
	if err != nil {
		return nil, err
	}
	for _, f := range [][2]string{
		{`,"config":{"schema":`, cfg.Schema},
		{`,"version":`, enc.Version},
	} {
		s, err := json.Marshal(f[1])
		if err != nil {
			return nil, err
		}
		head = append(append(head, f[0]...), s...)
	}
	head = append(head, `,"listeners":`...)
	var tail []byte
	if len(cfg.SessionKeys) > 0 { // omitempty
		keys, err := json.Marshal(cfg.SessionKeys)
		if err != nil {
			return nil, err
		}
		tail = append(append(tail, `,"sessionKeys":`...), keys...)
	}
	if len(cfg.AccessTeams) > 0 { // omitempty
		teams, err := json.Marshal(cfg.AccessTeams)
		if err != nil {
			return nil, err
		}
		tail = append(append(tail, `,"accessTeams":`...), teams...)
	}
	tail = append(tail, "}}"...)
	d := &document{
		version: enc.Version, routesHash: enc.RoutesHash, clustersHash: enc.ClustersHash,
		head: head, listeners: enc.Listeners, routes: enc.Routes, clusters: enc.Clusters, tail: tail,
		enc: enc, small: &proxycfg.Config{Schema: cfg.Schema, SessionKeys: cfg.SessionKeys, AccessTeams: cfg.AccessTeams},
	}
	for _, t := range cfg.AccessTeams {
		d.teams = append(d.teams, t.Domain)
	}
	d.size = len(head) + d.listeners.Len() + len(routesKey) + d.routes.Len() + len(clustersKey) + d.clusters.Len() + len(tail)
	return d, nil
}

// bytes is the whole document, assembled on first demand: once per
// version, by the first proxy to ask, and never for a version nobody
// fetched before the next replaced it.
func (d *document) bytes() []byte {
	d.bodyOnce.Do(func() {
		b := make([]byte, 0, d.size)
		b = append(b, d.head...)
		b = d.listeners.AppendTo(b)
		b = append(b, routesKey...)
		b = d.routes.AppendTo(b)
		b = append(b, clustersKey...)
		b = d.clusters.AppendTo(b)
		d.body = append(b, d.tail...)
	})
	return d.body
}

// gzipped is the document compressed (gzipBestSpeed), made on first
// demand like bytes, into a buffer that starts at an eighth of its size.
func (d *document) gzipped() []byte {
	d.gzipOnce.Do(func() { d.gz = gzipBestSpeed(d.bytes(), d.size/8) })
	return d.gz
}
