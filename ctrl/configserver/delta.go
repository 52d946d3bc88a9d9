// This file implements deltas from the versions before.

package configserver

import (
	"sync"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A proxy names the version it serves (configwatch.ParamBase) and, when
// that is one of the last versions published, is sent the new one as a
// delta from it (proxycfg.Delta) rather than whole: a change of one route
// at 5,000 routes is a few hundred bytes for the proxy to read instead of
// 3 MB. A version older than that, or unknown, gets the whole document.
//
// What a delta is made from is kept per version published (deltaBase):
// the Encoder's JSON of its lists, which later versions share element by
// element, so the history costs the element hashes and slices, not the
// JSON again. The delta from a base to the current version is made once,
// by the first proxy to ask with that base, and sent to the others.

// historyLen is how many published versions a scope can send deltas
// from: proxies usually serve the version before the current one, or
// one a few publishes behind during a burst.
const historyLen = 8

// deltaBase is what a published version keeps to be a delta's base.
type deltaBase struct {
	version string
	enc     proxycfg.Encoded
}

// deltaBody is the document of a delta from one base, made on first
// demand like a document's bytes.
type deltaBody struct {
	once, zOnce sync.Once
	body, gz    []byte
	err         error
}

// deltas are a document's deltas, by base version.
type deltas struct {
	mu     sync.Mutex
	byBase map[string]*deltaBody
}

// deltaFrom returns the document of the delta from base to d, or false
// when base is not among the versions published before d (history).
func (d *document) deltaFrom(base string, history []deltaBase) (*deltaBody, bool) {
	i := len(history) - 1
	for i >= 0 && history[i].version != base {
		i--
	}
	if i < 0 {
		return nil, false
	}
	d.deltas.mu.Lock()
	if d.deltas.byBase == nil {
		d.deltas.byBase = map[string]*deltaBody{}
	}
	db := d.deltas.byBase[base]
	if db == nil {
		db = &deltaBody{}
		d.deltas.byBase[base] = db
	}
	d.deltas.mu.Unlock()
	db.once.Do(func() { db.body, db.err = d.deltaJSON(history[i].enc) })
	return db, db.err == nil
}

// deltaJSON is the configwatch.Document of the delta from base to d.
func (d *document) deltaJSON(base proxycfg.Encoded) ([]byte, error) {
	b, err := appendEnvelopeHead(nil, d.version, d.routesHash, d.clustersHash)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"delta":`...)
	b, err = proxycfg.AppendDelta(b, base, d.enc, d.small)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// gzipMin is the size below which a delta is sent as it is: compressing
// a few hundred bytes saves nothing worth the time on both ends.
const gzipMin = 16 << 10

// bytes is the delta document.
func (db *deltaBody) bytes() []byte { return db.body }

// gzipped is the delta compressed (gzipBestSpeed), made on first
// demand; nil when it is small enough to send as it is.
func (db *deltaBody) gzipped() []byte {
	if len(db.body) < gzipMin {
		return nil
	}
	db.zOnce.Do(func() { db.gz = gzipBestSpeed(db.body, 0) })
	return db.gz
}
