package hostile

// Request targets that are not a path, with the access log on. RFC 9112
// has four forms of request target; clients mostly send the origin form
// ("/x"), but anyone can send the absolute form ("http://host/x"), the
// asterisk form ("OPTIONS *") or the authority form ("CONNECT host:443").
// net/http parses all of them into Request.URL; the proxy's own HTTP/1.1
// server leaves URL nil, and the access log reads it for any target that
// does not start with "/": a nil-pointer panic, after the handler wrote
// its answer but before it was sent, so the client gets its connection
// dropped and no log line is written. (net/http's server, for its part,
// answers "OPTIONS *" 200 itself unless DisableGeneralOptionsHandler is
// set: the proxy neither sees nor logs it.) Every h1 path must answer
// each shape completely (absolute form routed by its path, as net/http
// does; the other two 400), go on serving, and log one JSON object per
// request.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// logLines returns the lines the access log has written to out so far.
func logLines(out *testproc.SyncBuffer) []string {
	s, _ := strings.CutSuffix(out.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// oddTargets are request heads with a target that is not a path; host
// is the Host field, the path's address when empty.
var oddTargets = []struct {
	name, method string
	target       func(p path) string
	host         string
	want         int
}{
	{"absolute form", "GET", func(p path) string { return p.url("/x") }, "", 200},
	{"asterisk form", "OPTIONS", func(path) string { return "*" }, "", 400},
	{"authority form", "CONNECT", func(path) string { return "example.com:443" }, "example.com:443", 400},
}

func TestAccessLogOddTargets(t *testing.T) {
	var out testproc.SyncBuffer
	log := observe.NewAccessLog(&out, observe.AccessLogOptions{})
	t.Cleanup(log.Close) // after both proxies stopped
	be := newBackend(t)
	e := newEnv(t, be.addr, withOptions(func(o *dataplane.Options) { o.AccessLog = log }))

	e.each(func(t *testing.T, p path) {
		logged := len(logLines(&out))
		type entry struct {
			Method string `json:"method"`
			Status int    `json:"status"`
		}
		var want []entry
		for _, tc := range oddTargets {
			host := tc.host
			if host == "" {
				host = p.addr
			}
			head := tc.method + " " + tc.target(p) + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
			c := p.dial(t)
			res, body, err := exchange1(c, []byte(head), tc.method)
			c.Close()
			switch {
			case err != nil:
				t.Errorf("%s: %q: %v", tc.name, head, err)
			case res.StatusCode != tc.want:
				t.Errorf("%s: %q: got %d %q, want %d", tc.name, head, res.StatusCode, truncated(string(body)), tc.want)
			}
			want = append(want, entry{tc.method, tc.want})
		}
		// The proxy still serves.
		res, err := p.client.Get(p.url("/x"))
		if err != nil {
			t.Fatalf("GET /x after the odd targets: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET /x after the odd targets: %d, want 200", res.StatusCode)
		}
		want = append(want, entry{"GET", 200})

		// One JSON object per request, in order; lines are flushed every
		// 100 ms.
		var lines []string
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if lines = logLines(&out)[logged:]; len(lines) >= len(want) {
				break
			}
		}
		if len(lines) != len(want) {
			t.Fatalf("the access log has %d new lines, want %d (one per request): %q", len(lines), len(want), lines)
		}
		for i, l := range lines {
			var got entry
			if err := json.Unmarshal([]byte(l), &got); err != nil {
				t.Errorf("line %d is not a JSON object: %v: %q", i, err, l)
			} else if got != want[i] {
				t.Errorf("line %d is %+v, want %+v: %q", i, got, want[i], l)
			}
		}
	}, onH1)
}
