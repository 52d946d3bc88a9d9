package compiled

import (
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// attempts goes from 0 (no retry) to 100 (what v1.7's conformance suite
// asks for); more, or fewer, is refused.
func TestCompileRetryAttempts(t *testing.T) {
	for _, n := range []int{0, 1, 10, 100} {
		p, err := compileRetry(&proxycfg.Retry{Attempts: n, Codes: []int{503}})
		if err != nil || p.Attempts != n {
			t.Errorf("attempts %d: %+v, %v", n, p, err)
		}
	}
	for _, n := range []int{-1, 101} {
		if _, err := compileRetry(&proxycfg.Retry{Attempts: n}); err == nil || !strings.Contains(err.Error(), "out of range 0-100") {
			t.Errorf("attempts %d: %v, want out of range", n, err)
		}
	}
}
