// This file implements the back-off.

package configwatch

import (
	"math/rand/v2"
	"time"
)

// backoff is the pause after the n-th failure in a row (n ≥ 1): lo
// doubled per failure, capped at hi, of which the second half is random
// ("equal jitter"). Half fixed keeps a failing proxy from asking again
// almost at once; half random spreads out proxies that failed together,
// as every proxy does when the controller restarts.
func backoff(n int, lo, hi time.Duration) time.Duration {
	n = max(n, 1)
	d := hi
	if n < 32 { // beyond, the shift overflows; d is hi long before
		if s := lo << (n - 1); s > 0 && s < hi {
			d = s
		}
	}
	return d/2 + rand.N(d/2+1)
}
