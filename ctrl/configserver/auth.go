package configserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// authorized reports whether r carries the current bearer token
// (RFC 6750 §2.1), and whether it carried one at all.
func (s *Server) authorized(r *http.Request) (ok, presented bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return false, len(vals) > 0
	}
	got, presented := bearer(vals[0])
	want := s.token()
	if !presented || want == "" {
		return false, presented
	}
	// Comparing digests keeps the time independent of where the tokens
	// differ and of the expected token's length, which
	// subtle.ConstantTimeCompare alone would reveal.
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1, true
}

// bearer extracts the token of an "Authorization: Bearer <token>" value.
// The scheme is case-insensitive (RFC 9110 §11.1).
func bearer(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// refuse answers 401 with the challenge RFC 6750 §3 asks for; a request
// that presented a token is told it is invalid (RFC 6750 §3.1), so an
// operator can tell a wrong token from a missing one.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, presented bool) {
	s.m.request(r.Context(), resultUnauthorized)
	challenge := `Bearer realm="tunnelgate"`
	if presented {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
	if s.authLog.allow() {
		s.log.Warn("config request refused: bad or missing token (logged at most once a second)",
			"remote", r.RemoteAddr, "tokenPresented", presented)
	}
}

// rateLimit lets a message through at most once a second, so that
// whoever keeps knocking without a token cannot flood the log.
type rateLimit struct{ last atomic.Int64 }

func (l *rateLimit) allow() bool {
	now := time.Now().UnixNano()
	last := l.last.Load()
	return now-last >= int64(time.Second) && l.last.CompareAndSwap(last, now)
}
