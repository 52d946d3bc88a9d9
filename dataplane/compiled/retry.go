// This file compiles a rule's retry policy.

package compiled

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// RetryPolicy is a compiled HTTPRouteRetry.
//
// What is retried: a response whose status is in codes, and a failure to
// get any response at all (dial error, connection reset or closed before
// the response head, an attempt timing out). A request that may have
// reached the backend is sent again only if it is idempotent and its body
// was kept (see exchange.replayable); one that cannot have (the
// connection was refused, or none was free) always may be.
type RetryPolicy struct {
	codes [10]uint64 // bitmap of statuses 0-639
	// Attempts is how many retries a request gets at most.
	Attempts int
	backoff  time.Duration
}

// maxRetries caps attempts: retries multiply load on a struggling backend.
// The Gateway API sets no maximum, and v1.7's conformance suite asks for
// 100 (retrying until a broken endpoint's sibling answers); more is
// refused rather than cut silently.
const maxRetries = 100

func compileRetry(r *proxycfg.Retry) (*RetryPolicy, error) {
	p := &RetryPolicy{Attempts: r.Attempts, backoff: time.Duration(r.Backoff)}
	if r.Attempts < 0 || r.Attempts > maxRetries {
		return nil, fmt.Errorf("attempts %d out of range 0-%d", r.Attempts, maxRetries)
	}
	for _, c := range r.Codes {
		if c < 400 || c > 599 {
			return nil, fmt.Errorf("code %d is not a 4xx or 5xx status", c)
		}
		p.codes[c/64] |= 1 << (c % 64)
	}
	return p, nil
}

func (p *RetryPolicy) Retryable(status int) bool {
	return status >= 0 && status < 640 && p.codes[status/64]&(1<<(status%64)) != 0
}

// Wait is the pause before retry n (1-based): the configured backoff
// doubled per retry, capped at ten times the backoff, with up to 25%
// jitter added so that clients retrying together spread out. It is never
// below the configured minimum, as the spec requires.
func (p *RetryPolicy) Wait(n int) time.Duration {
	if p.backoff <= 0 {
		return 0
	}
	d := p.backoff
	for i := 1; i < n && d < 10*p.backoff; i++ {
		d *= 2
	}
	d = min(d, 10*p.backoff)
	return d + time.Duration(rand.Int64N(int64(d)/4+1))
}
