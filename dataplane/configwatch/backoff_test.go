package configwatch

import (
	"testing"
	"time"
)

func TestBackoffDoublesToTheCapWithJitter(t *testing.T) {
	lo, hi := 500*time.Millisecond, 30*time.Second
	for n := 0; n <= 100; n++ {
		step := hi
		if k := max(n, 1) - 1; k < 10 && lo<<k < hi {
			step = lo << k
		}
		for range 50 {
			d := backoff(n, lo, hi)
			if d < step/2 || d > step {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, step/2, step)
			}
		}
	}
}
