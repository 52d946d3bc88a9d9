// This file says which requests may be sent again.

package dataplane

import (
	"net/http"
)

// idempotent reports whether sending r twice has the effect of sending it
// once, so that it may be sent again after it may have reached a backend.
// RFC 9110 §9.2.2 names the idempotent methods (§9.2.2: a proxy MUST NOT
// retry the others automatically); as Go's Transport does, a request
// carrying Idempotency-Key or X-Idempotency-Key counts as idempotent,
// since that is what those headers promise.
func idempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := r.Header["Idempotency-Key"]
	_, xkey := r.Header["X-Idempotency-Key"]
	return key || xkey
}
