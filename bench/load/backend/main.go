// Command backend is the upstream of the load benchmark (bench/load/run.sh):
// a plain net/http HTTP/1.1 server that answers every GET (and HEAD) with
// the same 100-byte text/plain body. It is served directly as the "direct"
// target and sits behind every proxy under test.
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

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	flag.Parse()

	// Precomputed header values: Set would allocate a new slice per request.
	contentType := []string{"text/plain"}
	contentLength := []string{strconv.Itoa(len(body))}

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header()["Allow"] = []string{"GET, HEAD"}
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h["Content-Type"] = contentType
		h["Content-Length"] = contentLength
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(body)
		}
	})

	srv := &http.Server{
		Addr:              *listen,
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	log.Printf("backend: serving %d-byte bodies on %s", len(body), *listen)
	log.Fatal(srv.ListenAndServe())
}
