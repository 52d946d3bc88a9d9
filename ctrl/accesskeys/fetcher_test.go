package accesskeys

import (
	"context"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

// keyServer serves a testTeam's certs document over TLS on loopback, as
// Cloudflare would, with what it answers changeable.
type keyServer struct {
	*httptest.Server
	mu      sync.Mutex
	status  int
	body    string
	fetches atomic.Int32
}

func newKeyServer(t *testing.T, body string) *keyServer {
	ks := &keyServer{status: 200, body: body}
	ks.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.fetches.Add(1)
		if r.URL.Path != "/cdn-cgi/access/certs" {
			http.NotFound(w, r)
			return
		}
		ks.mu.Lock()
		defer ks.mu.Unlock()
		w.WriteHeader(ks.status)
		w.Write([]byte(ks.body))
	}))
	t.Cleanup(ks.Close)
	return ks
}

func (ks *keyServer) answer(status int, body string) {
	ks.mu.Lock()
	ks.status, ks.body = status, body
	ks.mu.Unlock()
}

const testTeam = "example.cloudflareaccess.com"

func certs(t *testing.T, kid string) string {
	return string(testaccess.Certs(t, map[string]*rsa.PublicKey{kid: &testaccess.Key(t, "team").PublicKey}))
}

// fetcher is a Fetcher of ks with a clock the test moves; fetchDue does
// what Run would at that time, synchronously.
func fetcher(t *testing.T, ks *keyServer) (f *Fetcher, clock *time.Time, changes *atomic.Int32) {
	clock = new(time.Time)
	*clock = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	changes = new(atomic.Int32)
	f = New(Options{Client: ks.Client(), URL: func(string) string { return ks.URL + "/cdn-cgi/access/certs" },
		Now: func() time.Time { return *clock }, OnChange: func() { changes.Add(1) }})
	return f, clock, changes
}

func (f *Fetcher) fetchDue() {
	for _, d := range f.due() {
		f.fetch(context.Background(), d)
	}
}

func TestFetchKeepsAndReports(t *testing.T) {
	good := certs(t, "k1")
	ks := newKeyServer(t, good)
	f, clock, changes := fetcher(t, ks)

	f.Want([]string{testTeam, "not-a-testTeam.example.com"})
	if k := f.Keys(); len(k) != 0 {
		t.Fatalf("keys before any fetch: %v", k)
	}
	f.fetchDue()
	k := f.Keys()[testTeam]
	if k == nil || k.Doc != good || k.Problem != "" || changes.Load() != 1 || ks.fetches.Load() != 1 {
		t.Fatalf("after the first fetch: %+v, %d changes, %d fetches", k, changes.Load(), ks.fetches.Load())
	}
	if _, ok := f.Keys()["not-a-testTeam.example.com"]; ok {
		t.Error("a domain that is not a testTeam's was fetched")
	}

	// Not due yet: nothing fetched. Due, same document: the same keys,
	// no change (translate's Cache compares them by pointer).
	f.fetchDue()
	*clock = clock.Add(DefaultRefresh)
	f.fetchDue()
	if ks.fetches.Load() != 2 || f.Keys()[testTeam] != k || changes.Load() != 1 {
		t.Fatalf("refresh of the same keys: %d fetches, keys replaced %v, %d changes", ks.fetches.Load(), f.Keys()[testTeam] != k, changes.Load())
	}

	// The server fails: the keys stay, the problem is told, and the next
	// try comes sooner than a refresh.
	for _, bad := range []struct {
		status int
		body   string
		want   string
	}{
		{500, "", "500 Internal Server Error"},
		{200, `{"keys":[]}`, "no usable key"},
		{200, strings.Repeat(" ", maxDocument+1), "larger than"},
	} {
		ks.answer(bad.status, bad.body)
		*clock = clock.Add(DefaultRefresh)
		f.fetchDue()
		k := f.Keys()[testTeam]
		if k.Doc != good || !strings.Contains(k.Problem, bad.want) {
			t.Fatalf("server answering %d %.20q: keys %+v, want the old keys and %q", bad.status, bad.body, k, bad.want)
		}
	}
	n := ks.fetches.Load()
	*clock = clock.Add(DefaultMinInterval * 8)
	f.fetchDue()
	if ks.fetches.Load() != n+1 {
		t.Fatal("a failed fetch is not retried before the refresh")
	}

	// Rotated keys: taken, and the problem gone.
	rotated := certs(t, "k2")
	ks.answer(200, rotated)
	*clock = clock.Add(DefaultRefresh)
	f.fetchDue()
	if k := f.Keys()[testTeam]; k.Doc != rotated || k.Problem != "" {
		t.Fatalf("after the rotation: %+v", k)
	}
}

func TestFetchWithoutKeysReportsWhy(t *testing.T) {
	ks := newKeyServer(t, "")
	ks.answer(404, "")
	f, _, changes := fetcher(t, ks)
	f.Want([]string{testTeam})
	f.fetchDue()
	k := f.Keys()[testTeam]
	if k == nil || k.Doc != "" || !strings.Contains(k.Problem, "404") || changes.Load() != 1 {
		t.Fatalf("keys %+v, %d changes", k, changes.Load())
	}
}

// Stale fetches at once, but not more often than MinInterval: one asked
// for sooner is deferred to MinInterval after the last fetch, not
// dropped, as is one asked for during a fetch.
func TestStaleIsRateLimited(t *testing.T) {
	ks := newKeyServer(t, certs(t, "k1"))
	f, clock, _ := fetcher(t, ks)
	f.Want([]string{testTeam})
	f.fetchDue()
	f.Stale(testTeam)
	f.fetchDue()
	if n := ks.fetches.Load(); n != 1 {
		t.Fatalf("Stale right after a fetch fetched: %d fetches", n)
	}
	*clock = clock.Add(DefaultMinInterval - time.Second)
	f.fetchDue()
	if n := ks.fetches.Load(); n != 1 {
		t.Fatalf("before MinInterval: %d fetches, want 1", n)
	}
	*clock = clock.Add(time.Second)
	f.fetchDue()
	if n := ks.fetches.Load(); n != 2 {
		t.Fatalf("the deferred Stale at MinInterval: %d fetches, want 2", n)
	}
	*clock = clock.Add(DefaultMinInterval)
	f.Stale(testTeam)
	f.fetchDue()
	if n := ks.fetches.Load(); n != 3 {
		t.Fatalf("Stale after MinInterval: %d fetches, want 3", n)
	}
	f.fetchDue()
	if n := ks.fetches.Load(); n != 3 {
		t.Fatalf("nothing more asked, yet %d fetches", n)
	}
	f.Stale("other.cloudflareaccess.com") // not wanted: nothing
	*clock = clock.Add(DefaultMinInterval)
	f.fetchDue()
	if n := ks.fetches.Load(); n != 3 {
		t.Fatalf("Stale of a team not wanted fetched: %d", n)
	}
}

// Stale during a fetch (which may have read the set just before the new
// key was published) fetches again MinInterval after that fetch began.
func TestStaleDuringAFetch(t *testing.T) {
	ks := newKeyServer(t, certs(t, "k1"))
	f, clock, _ := fetcher(t, ks)
	f.Want([]string{testTeam})
	due := f.due()
	f.Stale(testTeam) // while due's fetch is on its way
	for _, d := range due {
		f.fetch(t.Context(), d)
	}
	*clock = clock.Add(DefaultMinInterval)
	f.fetchDue()
	if n := ks.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want the second MinInterval after the first", n)
	}
}

// Forgotten teams are dropped; Run fetches a new testTeam without a clock
// tick.
func TestRunFetchesWantedTeams(t *testing.T) {
	ks := newKeyServer(t, certs(t, "k1"))
	changed := make(chan struct{}, 4)
	f := New(Options{Client: ks.Client(), URL: func(string) string { return ks.URL + "/cdn-cgi/access/certs" },
		OnChange: func() { changed <- struct{}{} }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.Run(ctx)
	f.Want([]string{testTeam})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no fetch within 10s")
	}
	if f.Keys()[testTeam] == nil {
		t.Fatal("no keys after the change")
	}
	f.Want(nil)
	if len(f.Keys()) != 0 {
		t.Fatal("a testTeam no longer wanted is kept")
	}
}
