// Command echo is the quickstart's demo backend: it answers every request
// with its own name and what it received, so the routing decisions of the
// gateway are visible in a terminal.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"sort"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9101", "address to serve on")
	name := flag.String("name", "echo", "name to answer with")
	flag.Parse()
	h := func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "backend: %s\n%s %s (host %s)\n", *name, r.Method, r.URL.RequestURI(), r.Host)
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: %s\n", k, strings.Join(r.Header[k], ", "))
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, b.String())
	}
	log.Printf("echo %s listening on %s", *name, *listen)
	log.Fatal(http.ListenAndServe(*listen, http.HandlerFunc(h)))
}
