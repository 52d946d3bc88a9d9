// This file writes the answers the proxy makes itself.

package dataplane

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// Answers the proxy makes itself: a short text body for people and curl,
// or a gRPC status for gRPC clients, which cannot read an HTTP error.
var (
	textPlain = []string{"text/plain; charset=utf-8"}
	nosniff   = []string{"nosniff"}
	grpcType  = []string{"application/grpc"}
)

// reply answers with status and a one-line explanation.
func reply(w http.ResponseWriter, r *http.Request, stats *observe.Counters, status int, msg string) {
	hdr := w.Header()
	if isGRPC(r) {
		// A gRPC "trailers-only" response: HTTP 200 with the status in the
		// headers (gRPC over HTTP/2 spec).
		hdr["Content-Type"] = grpcType
		hdr["Grpc-Status"] = []string{strconv.Itoa(grpcCode(status))}
		hdr["Grpc-Message"] = []string{msg}
		stats.Status(http.StatusOK)
		w.WriteHeader(http.StatusOK)
		return
	}
	hdr["Content-Type"] = textPlain
	hdr["X-Content-Type-Options"] = nosniff
	stats.Status(status)
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write([]byte(statusText(status) + ": " + msg + "\n"))
	}
}

func isGRPC(r *http.Request) bool {
	ct := r.Header["Content-Type"]
	return len(ct) > 0 && strings.HasPrefix(ct[0], "application/grpc")
}

// grpcCode maps the proxy's own error statuses to gRPC codes, following
// grpc's "HTTP to gRPC status code mapping" where it has an entry.
func grpcCode(status int) int {
	switch status {
	case http.StatusBadRequest:
		return 13 // INTERNAL
	case http.StatusUnauthorized:
		return 16 // UNAUTHENTICATED
	case http.StatusForbidden:
		return 7 // PERMISSION_DENIED
	case http.StatusNotFound:
		return 12 // UNIMPLEMENTED
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable:
		return 14 // UNAVAILABLE
	case http.StatusGatewayTimeout:
		return 4 // DEADLINE_EXCEEDED: the proxy's own deadline expired
	case http.StatusInternalServerError:
		return 13 // INTERNAL
	}
	return 2 // UNKNOWN
}
