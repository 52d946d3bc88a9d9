// This file implements bearer tokens and the scope each opens.

package configserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// authorize reads r's bearer token (RFC 6750 §2.1) and returns the
// scope it opens: the shared one for the shared proxies' token, a plane's
// for that plane's token. It also reports whether a token was presented
// at all.
func (s *Server) authorize(r *http.Request) (g grant, ok, presented bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return grant{}, false, len(vals) > 0
	}
	got, presented := bearer(vals[0])
	if !presented {
		return grant{}, false, false
	}
	// Comparing digests keeps the time independent of where the tokens
	// differ and of the expected token's length, which
	// subtle.ConstantTimeCompare alone would reveal. A plane is found by
	// its digest in a map: what the lookup's time could tell is about
	// the digest, which a guesser cannot steer towards a token.
	digest := sha256.Sum256([]byte(got))
	shared := false
	if want := s.token(); want != "" {
		w := sha256.Sum256([]byte(want))
		shared = subtle.ConstantTimeCompare(digest[:], w[:]) == 1
	}
	plane, key := s.planes.lookup(digest)
	switch {
	case shared && plane != nil:
		// The shared token changed to a plane's after that plane was
		// published (PublishPlanes leaves out a plane that has it).
		// Either answer would hand one side the other's config.
		if s.collisionLog.allow() {
			s.log.Error("config request refused: the shared proxies' token is also a plane's token, so neither is served with it; give the shared proxies a new token (logged at most once a second)",
				"plane", key)
		}
		return grant{}, false, true
	case shared:
		return grant{sc: s.shared}, true, true
	case plane != nil:
		return grant{sc: plane, digest: digest}, true, true
	}
	return grant{}, false, true
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
