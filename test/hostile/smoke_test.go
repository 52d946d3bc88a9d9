package hostile

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestEveryPathServes checks the harness itself: a well-behaved backend
// answers through every way in, with the protocol the path names.
func TestEveryPathServes(t *testing.T) {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	}))
	t.Cleanup(be.Close)
	e := newEnv(t, be.Listener.Addr().String())
	e.each(func(t *testing.T, p path) {
		res, err := p.client.Get(p.url("/x"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || string(b) != "hello /x" {
			t.Fatalf("got %d %q", res.StatusCode, b)
		}
		want := 1
		if p.proto != "h1" {
			want = 2
		}
		if res.ProtoMajor != want {
			t.Fatalf("spoke HTTP/%d, want %d", res.ProtoMajor, want)
		}
	})
}
