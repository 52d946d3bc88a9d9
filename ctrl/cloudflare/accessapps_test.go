package cloudflare_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/cffake"
)

func withApps(d cloudflare.Desired, apps ...translate.AccessApp) cloudflare.Desired {
	d.AccessApps = apps
	return d
}

func peopleApp(policy, name string, hosts ...string) translate.AccessApp {
	return translate.AccessApp{Policy: policy, Name: name, Hostnames: hosts, SessionDuration: "12h",
		Emails: []string{"ana@example.com"}, EmailDomains: []string{"example.org"}}
}

// appOf finds the account's application of that name made by the sync
// (tagged by it).
func (w *world) appOf(name string) (cffake.AccessApp, bool) {
	for _, a := range w.f.AccessApps(account) {
		if a.Name == name && len(a.Tags) == 1 && strings.HasPrefix(a.Tags[0], "tunnelgate-") {
			return a, true
		}
	}
	return cffake.AccessApp{}, false
}

// An AccessPolicy's application is created with its policy, and its AUD
// reported; a change of hostnames, people or service tokens updates it in
// place (same AUD); a steady state writes nothing; an application nobody
// wants goes, with its policies; foreign applications, one of them on
// the same hostname and of the same name, are never touched.
func TestAccessApplicationsKept(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	foreign := w.f.AddAccessApp(account, "team/app", "app.example.com", "someone-elses")
	w.s.Update([]cloudflare.Desired{withApps(desired("app.example.com", "api.example.com"),
		peopleApp("team/app", "team/app", "app.example.com"))})

	st := w.waitState(t, "an application's AUD", func(st *translate.TunnelState) bool { return st.AccessApps["team/app"].AUD != "" })
	tunnel := st.ID
	aud := st.AccessApps["team/app"].AUD
	var ours cffake.AccessApp
	for _, a := range w.f.AccessApps(account) {
		if a.ID != foreign {
			ours = a
		}
	}
	if ours.AUD != aud || ours.Name != "team/app" || !slices.Equal(ours.Tags, []string{"tunnelgate-" + tunnel}) ||
		!slices.Equal(ours.Destinations, []string{"app.example.com"}) || ours.SessionDuration != "12h" || len(ours.Policies) != 1 ||
		ours.Policies[0].Decision != "allow" ||
		!slices.Equal(ours.Policies[0].Include, []string{`{"email":{"email":"ana@example.com"}}`, `{"email_domain":{"domain":"example.org"}}`}) {
		t.Fatalf("our application %+v", ours)
	}

	// Steady: the drift check finds nothing to write.
	w.f.ResetCalls()
	w.s.Update([]cloudflare.Desired{withApps(desired("app.example.com", "api.example.com"),
		peopleApp("team/app", "team/app", "app.example.com"))})
	time.Sleep(100 * time.Millisecond)
	for _, c := range w.f.Calls() {
		if c.Method != http.MethodGet && strings.Contains(c.Path, "/access/") {
			t.Errorf("a steady state wrote %s %s", c.Method, c.Path)
		}
	}

	// A change updates in place.
	changed := peopleApp("team/app", "team/app", "api.example.com", "app.example.com")
	changed.Emails = []string{"bo@example.com"}
	changed.ServiceTokens = true
	w.s.Update([]cloudflare.Desired{withApps(desired("app.example.com", "api.example.com"), changed)})
	w.waitState(t, "the change applied", func(*translate.TunnelState) bool {
		a, _ := w.appOf("team/app")
		return len(a.Destinations) == 2 && len(a.Policies) == 2
	})
	a, _ := w.appOf("team/app")
	if a.AUD != aud || a.ID != ours.ID || a.Policies[1].Decision != "non_identity" ||
		!slices.Equal(a.Policies[0].Include, []string{`{"email":{"email":"bo@example.com"}}`, `{"email_domain":{"domain":"example.org"}}`}) ||
		!slices.Equal(a.Policies[1].Include, []string{`{"any_valid_service_token":{}}`}) {
		t.Errorf("updated %+v, want the same application (AUD %s)", a, aud)
	}

	// Unwanted: deleted with its policies; the foreign one stays.
	w.s.Update([]cloudflare.Desired{desired("app.example.com", "api.example.com")})
	w.waitState(t, "our application deleted", func(st *translate.TunnelState) bool {
		_, ok := w.appOf("team/app")
		return len(st.AccessApps) == 0 && (!ok || len(w.f.AccessApps(account)) == 1)
	})
	if apps := w.f.AccessApps(account); len(apps) != 1 || apps[0].ID != foreign {
		t.Errorf("left: %+v; want the foreign application alone", apps)
	}
	if ps := w.f.AccessPolicies(account); len(ps) != 0 {
		t.Errorf("policies left: %+v", ps)
	}
}

// An application Cloudflare refuses is that application's problem: the
// tunnel, DNS and the other applications go on. One nobody could log in
// to, or with a name taken by another policy's, is refused before any
// request. A 429 is retried, and the AUDs known stay meanwhile.
func TestAccessApplicationProblems(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	nobody := translate.AccessApp{Policy: "team/nobody", Name: "nobody", Hostnames: []string{"n.example.com"}}
	twin := peopleApp("team/twin", "team/app", "t.example.com")
	bad := peopleApp("team/bad", "bad", "b.example.com")
	bad.SessionDuration = "forever"
	w.s.Update([]cloudflare.Desired{withApps(desired("app.example.com"), peopleApp("team/app", "team/app", "app.example.com"), nobody, twin, bad)})
	st := w.waitState(t, "the good application and the problems", func(st *translate.TunnelState) bool {
		return st.AccessApps["team/app"].AUD != "" && st.AccessApps["team/bad"].Problem != ""
	})
	for policy, want := range map[string]string{"team/nobody": "nobody could log in", "team/twin": "AccessPolicy team/app",
		"team/bad": "session_duration"} {
		if got := st.AccessApps[policy]; got.AUD != "" || !strings.Contains(got.Problem, want) {
			t.Errorf("%s: %+v, want a problem saying %q", policy, got, want)
		}
	}
	if st.Pending != "" || st.Problem != "" {
		t.Errorf("the tunnel's state %q %q: an application's problem is its own", st.Pending, st.Problem)
	}
	aud := st.AccessApps["team/app"].AUD

	w.f.Fail(cffake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 50 * time.Millisecond, Times: 3,
		Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/access/apps") }})
	grown := peopleApp("team/app", "team/app", "app.example.com", "www.example.com")
	w.s.Update([]cloudflare.Desired{withApps(desired("app.example.com", "www.example.com"), grown)})
	w.waitState(t, "the change applied after the rate limit", func(st *translate.TunnelState) bool {
		if got := st.AccessApps["team/app"]; got.AUD != aud {
			t.Fatalf("while rate-limited the AUD became %+v", got)
		}
		a, _ := w.appOf("team/app")
		return len(a.Destinations) == 2
	})
	if n := w.s.Stats.RateLimited.Load(); n < 3 {
		t.Errorf("%d rate-limited calls, want 3", n)
	}
}

// A departing Gateway's tunnel takes its Access applications and their
// policies with it; the class's stay.
func TestAccessApplicationsDepart(t *testing.T) {
	w := newWorld(t, cloudflare.Options{DNSEvery: time.Hour})
	class := withApps(desired("app.example.com"), peopleApp("team/app", "team/app", "app.example.com"))
	plane := withApps(planeWish("gw", "team-a-gw", time.Now().Add(-time.Hour), "a.example.com"),
		peopleApp("team-a/protect", "team-a/protect", "a.example.com"))
	w.s.Update([]cloudflare.Desired{class, plane})
	waitKey(t, w, plane.Class, func(s *translate.TunnelState) bool { return s.AccessApps["team-a/protect"].AUD != "" })
	w.waitState(t, "the class's application", func(st *translate.TunnelState) bool { return st.AccessApps["team/app"].AUD != "" })
	if n := len(w.f.AccessApps(account)); n != 2 {
		t.Fatalf("%d applications, want 2", n)
	}

	w.s.Update([]cloudflare.Desired{class, departing(plane, false, "")})
	waitKey(t, w, plane.Class, func(s *translate.TunnelState) bool { return s.Departed })
	apps := w.f.AccessApps(account)
	if len(apps) != 1 || apps[0].Name != "team/app" {
		t.Errorf("applications left %+v, want the class's alone", apps)
	}
	for _, p := range w.f.AccessPolicies(account) {
		if strings.Contains(p.Name, "team-a/protect") {
			t.Errorf("the departed Gateway's policy %s is left", p.Name)
		}
	}
}
