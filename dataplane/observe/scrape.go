// This file implements the serving of a scrape: gathered families, then streamed ones.

package observe

import (
	"bufio"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// textContentType is the type of every scrape: the text format, version
// 0.0.4. Prometheus parses a scrape by the type of its response, and
// this is the one format written here, whatever the scraper's Accept
// asks for.
const textContentType = "text/plain; version=0.0.4; charset=utf-8"

// metricsHandler serves a scrape of the registry gather and of src's
// streamed families (metrics.go).
type metricsHandler struct {
	gather prometheus.Gatherer
	src    Source
	detail Detail
	log    *slog.Logger
	// lists are kept for the next scrape; one that finds them taken
	// (scrapes at once) makes its own.
	lists struct {
		sync.Mutex
		scrapeLists
	}
}

// scrapeWriters are the buffers of a scrape, reused from one to the next:
// a scrape of thousands of series then allocates little.
var scrapeWriters = sync.Pool{New: func() any {
	return &scrapeWriter{bw: bufio.NewWriterSize(nil, 32<<10), t: textWriter{line: make([]byte, 0, 512), labels: make([]byte, 0, 256)}}
}}

// scrapeWriter is what one scrape writes with.
type scrapeWriter struct {
	bw *bufio.Writer
	gz *gzip.Writer // made at the first scrape taking gzip
	t  textWriter
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Errors are logged and what can be served is (as the Prometheus
	// client's handler does with ContinueOnError): a family that fails to
	// gather must not take the others with it.
	mfs, err := h.gather.Gather()
	if err != nil {
		h.log.Error("metrics: gathering", "err", err)
	}
	sw := scrapeWriters.Get().(*scrapeWriter)
	defer scrapeWriters.Put(sw)
	hdr := w.Header()
	hdr.Set("Content-Type", textContentType)
	hdr.Add("Vary", "Accept-Encoding")
	var out io.Writer = w
	if httpsyntax.AcceptsGzip(r.Header.Values("Accept-Encoding")) {
		hdr.Set("Content-Encoding", "gzip")
		if sw.gz == nil {
			sw.gz = gzip.NewWriter(w)
		} else {
			sw.gz.Reset(w)
		}
		out = sw.gz
	}
	sw.bw.Reset(out)
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(sw.bw, mf); err != nil {
			h.log.Error("metrics: encoding "+mf.GetName(), "err", err)
			break
		}
	}
	sw.t.w = sw.bw
	lists := &scrapeLists{}
	if h.lists.TryLock() {
		defer h.lists.Unlock()
		lists = &h.lists.scrapeLists
		defer lists.clear()
	}
	writeRoutes(&sw.t, h.src, h.detail, lists)
	writeStreams(&sw.t, h.src, lists.clusters)
	sw.t.w = nil
	err = sw.bw.Flush()
	if sw.gz != nil && out == sw.gz {
		if cerr := sw.gz.Close(); err == nil {
			err = cerr
		}
		sw.gz.Reset(io.Discard) // hold no ResponseWriter in the pool
	}
	sw.bw.Reset(nil)
	if err != nil {
		h.log.Error("metrics: writing the scrape", "err", err)
	}
}
