// Command backend is the upstream of the load benchmark (bench/load/run.sh):
// a plain net/http HTTP/1.1 server that answers every GET (and HEAD) with
// the same 100-byte text/plain body, or, for a path under /64k, with a
// fixed 65,536-byte body (the body64k shape). Host and any other path are
// ignored, so every route of the routes5k shape reaches it. It is served
// directly as the "direct" target and sits behind every proxy under test.
package main

import (
	"flag"
	"log"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// body is the fixed response: 100 bytes, the size performance.md used.
var body = []byte(strings.Repeat("0123456789", 10))

// bigPrefix is the path prefix answered with bigBody, 64 KiB of text.
const bigPrefix = "/64k"

var bigBody = []byte(strings.Repeat("0123456789abcdef", 4096))

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	flag.Parse()

	// Precomputed header values: Set would allocate a new slice per request.
	contentType := []string{"text/plain"}
	contentLength := []string{strconv.Itoa(len(body))}
	bigLength := []string{strconv.Itoa(len(bigBody))}

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header()["Allow"] = []string{"GET, HEAD"}
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		b, length := body, contentLength
		if strings.HasPrefix(r.URL.Path, bigPrefix) {
			b, length = bigBody, bigLength
		}
		h := w.Header()
		h["Content-Type"] = contentType
		h["Content-Length"] = length
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	})

	srv := &http.Server{
		Addr:              *listen,
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	log.Printf("backend: serving %d-byte bodies (%d under %s) on %s", len(body), len(bigBody), bigPrefix, *listen)
	log.Fatal(srv.ListenAndServe())
}
