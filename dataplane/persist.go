// This file writes session persistence tokens on responses.

package dataplane

import (
	"net/http"
	"time"
)

// setSession writes the session token on the response: a new token when
// the request started a session, and a refreshed one (new last-use time)
// on every response when the policy has an idle timeout, so that an active
// client's session does not lapse.
func (x *exchange) setSession(r *http.Request, hdr http.Header) {
	p := x.rule.Session
	if !x.newSession && !p.Refreshed() {
		return
	}
	start := x.sessionStart
	if x.newSession || start.IsZero() {
		start = x.start
	}
	ep := x.ep
	if ep == nil {
		// The endpoint is chosen per attempt; the session pins whichever
		// answered. forwardH1/H2 record it in x.ep before respond.
		return
	}
	var buf [256]byte
	who := x.cs.name + " " + ep.addr
	tok := string(x.cc.session.Encode(buf[:0], x.rule.SessionScope, who, start, x.start))
	p.Carry(hdr, tok, start, time.Now(), clientScheme(r, x.h.trusted) == "https")
}
