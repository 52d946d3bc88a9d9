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
	p := x.rule.session
	if !x.newSession && p.idle <= 0 {
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
	tok := string(x.snap.session.Encode(buf[:0], x.rule.sessionScope, who, start, x.start))
	if p.header {
		hdr[p.headerKey] = []string{tok}
		return
	}
	hdr["Set-Cookie"] = append(hdr["Set-Cookie"], p.setCookie(tok, time.Now(), clientScheme(r, x.h.trusted) == "https"))
}
