// This file writes the head every document opens with.

package configserver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
)

// What a whole document (document.go) and a delta (delta.go) have in
// common: the head of the configwatch.Document they are, and the
// compression of it.

// appendEnvelopeHead appends to b the head every configwatch.Document
// opens with, whole or a delta: `{"version":V,"routesHash":R,"clustersHash":C`,
// each value as json.Marshal writes it. The caller writes the rest,
// `,"config":…` or `,"delta":…`, and the closing brace.
func appendEnvelopeHead(b []byte, version, routesHash, clustersHash string) ([]byte, error) {
	for _, f := range [][2]string{{`{"version":`, version}, {`,"routesHash":`, routesHash}, {`,"clustersHash":`, clustersHash}} {
		s, err := json.Marshal(f[1])
		if err != nil {
			return nil, err
		}
		b = append(append(b, f[0]...), s...)
	}
	return b, nil
}

// gzipBestSpeed compresses p at gzip.BestSpeed: JSON this repetitive
// still shrinks more than tenfold, at a fraction of the default level's
// time, and the controller pays it on every endpoint change. When grow
// is above zero, the output buffer reserves that many bytes up front.
func gzipBestSpeed(p []byte, grow int) []byte {
	var buf bytes.Buffer
	if grow > 0 {
		buf.Grow(grow)
	}
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // the level is valid
	zw.Write(p)                                        // a bytes.Buffer does not fail
	zw.Close()
	return buf.Bytes()
}
