package configserver

import (
	"bytes"
	"compress/gzip"
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
	// clusters, tail. The lists' elements are the encode cache's own,
	// shared with later versions that did not change them; nothing writes
	// to them.
	head                        []byte
	listeners, routes, clusters jsonList
	tail                        []byte
	size                        int

	bodyOnce sync.Once
	body     []byte
	gzipOnce sync.Once
	gz       []byte
}

// jsonList is a JSON array as its elements' JSON.
type jsonList struct {
	null  bool // the slice was nil: JSON null
	elems [][]byte
}

func (l jsonList) size() int {
	if l.null {
		return len("null")
	}
	n := 2 + max(len(l.elems)-1, 0) // brackets and commas
	for _, e := range l.elems {
		n += len(e)
	}
	return n
}

func (l jsonList) appendTo(b []byte) []byte {
	if l.null {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, e := range l.elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

const (
	routesKey   = `,"routes":`
	clustersKey = `,"clusters":`
)

// newDocument assembles the document around the JSON of the config's
// lists. It writes what json.Marshal would write for a
// configwatch.Document holding cfg with Version set (a test holds it to
// that), without encoding the lists again.
func newDocument(version, routesHash, clustersHash string, cfg *proxycfg.Config, listeners, routes, clusters jsonList) (*document, error) {
	var head []byte
	for _, f := range [][2]string{
		{`{"version":`, version},
		{`,"routesHash":`, routesHash},
		{`,"clustersHash":`, clustersHash},
		{`,"config":{"schema":`, cfg.Schema},
		{`,"version":`, version},
	} {
		s, err := json.Marshal(f[1])
		if err != nil {
			return nil, err
		}
		head = append(append(head, f[0]...), s...)
	}
	head = append(head, `,"listeners":`...)
	tail := []byte("}}")
	if len(cfg.SessionSecret) > 0 { // omitempty
		secret, err := json.Marshal(cfg.SessionSecret)
		if err != nil {
			return nil, err
		}
		tail = append(append([]byte(`,"sessionSecret":`), secret...), tail...)
	}
	d := &document{
		version: version, routesHash: routesHash, clustersHash: clustersHash,
		head: head, listeners: listeners, routes: routes, clusters: clusters, tail: tail,
	}
	d.size = len(head) + listeners.size() + len(routesKey) + routes.size() + len(clustersKey) + clusters.size() + len(tail)
	return d, nil
}

// bytes is the whole document, assembled on first demand: once per
// version, by the first proxy to ask, and never for a version nobody
// fetched before the next replaced it.
func (d *document) bytes() []byte {
	d.bodyOnce.Do(func() {
		b := make([]byte, 0, d.size)
		b = append(b, d.head...)
		b = d.listeners.appendTo(b)
		b = append(b, routesKey...)
		b = d.routes.appendTo(b)
		b = append(b, clustersKey...)
		b = d.clusters.appendTo(b)
		d.body = append(b, d.tail...)
	})
	return d.body
}

// gzipped is the document compressed, made on first demand like bytes.
// BestSpeed: JSON this repetitive still shrinks more than tenfold, at a
// fraction of the default level's time, and the controller pays it on
// every endpoint change.
func (d *document) gzipped() []byte {
	d.gzipOnce.Do(func() {
		var buf bytes.Buffer
		buf.Grow(d.size / 8)
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // the level is valid
		zw.Write(d.bytes())                                // a bytes.Buffer does not fail
		zw.Close()
		d.gz = buf.Bytes()
	})
	return d.gz
}
