package configwatch_test

import (
	"crypto/rsa"
	"io"
	"net/http"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

const accessTeam = "watch.cloudflareaccess.com"

// A token naming a key its team's set lacks, as after Cloudflare rotated
// the team's key, has the proxy tell the controller at once: it cuts its
// held request short (the server would hold it an hour) to name the team.
// However many such tokens follow within the minute, it names the team
// once. When a config carries the new key, the token passes.
func TestUnknownAccessKeyAsksForTheTeamsKeys(t *testing.T) {
	a := backend(t, "a")
	asked := make(chan string, 16)
	ctl := startController(t, "", configserver.Options{OnUnknownAccessKeys: func(team string) { asked <- team }})
	px := startProxy(t, ctl.url, configwatch.Options{})
	old, rotated := testaccess.Key(t, "watch-old"), testaccess.Key(t, "watch-new")

	v := ctl.Publish(accessConfig(t, a, map[string]*rsa.PublicKey{"old": &old.PublicKey}))
	waitFor(t, "the proxy to hold a request at the first version", func() bool { _, held := ctl.counts(v); return held == 1 })
	token := testaccess.Sign(t, jose.RS256, rotated, "new", testaccess.JSON(t, map[string]any{
		"aud": []string{"watch-app"}, "iss": "https://" + accessTeam, "sub": "u",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}), nil)
	if code := px.getToken(token); code != http.StatusForbidden {
		t.Fatalf("a token of a key not in the config: %d, want 403", code)
	}
	select {
	case team := <-asked:
		if team != accessTeam {
			t.Fatalf("the proxy named %q", team)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the controller was not told of the unknown key within 10 s")
	}
	waitFor(t, "the proxy to hold a request again", func() bool { _, held := ctl.counts(v); return held == 1 })

	before, _ := ctl.counts(v)
	for range 5 {
		if code := px.getToken(token); code != http.StatusForbidden {
			t.Fatalf("again: %d, want 403", code)
		}
	}
	if after, _ := ctl.counts(v); after != before || px.p.UnknownAccessKeys().Pending() {
		t.Errorf("within the minute the proxy asked again: requests %d → %d, pending %v", before, after, px.p.UnknownAccessKeys().Pending())
	}
	s := px.w.Stats()
	if n := s.AccessKeyRequests.Load(); n != 1 {
		t.Errorf("access key requests %d, want 1", n)
	}
	if n := s.Failures[configwatch.FailUnreachable].Load(); n != 0 {
		t.Errorf("%d unreachable failures: a request cut short is none", n)
	}
	if _, scrape := px.admin("/metrics"); !hasSample(scrape, "tunnelgate_config_watch_access_key_requests_total", "1") {
		t.Errorf("no access_key_requests_total 1 in the proxy's metrics")
	}

	ctl.Publish(accessConfig(t, a, map[string]*rsa.PublicKey{"old": &old.PublicKey, "new": &rotated.PublicKey}))
	waitFor(t, "the token to pass with the rotated keys", func() bool { return px.getToken(token) == http.StatusOK })
	select {
	case team := <-asked:
		t.Errorf("the controller was told of %s again", team)
	default:
	}
}

// accessConfig is config("", backend) with its rule protected by
// accessTeam, whose set holds keys.
func accessConfig(t *testing.T, backend string, keys map[string]*rsa.PublicKey) *proxycfg.Config {
	cfg := config("", backend)
	cfg.AccessTeams = []proxycfg.AccessTeam{{Domain: accessTeam, Keys: string(testaccess.Certs(t, keys))}}
	cfg.Routes[0].Rules[0].Access = &proxycfg.Access{Team: accessTeam, Audiences: []string{"watch-app"}}
	return cfg
}

// getToken sends a request for app.example with an Access token, and
// returns the status.
func (px *proxy) getToken(token string) int {
	px.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+px.bound.Origin+"/", nil)
	req.Host = "app.example"
	req.Header.Set("Cf-Access-Jwt-Assertion", token)
	res, err := px.http.Do(req)
	if err != nil {
		px.t.Fatalf("request through the proxy: %v", err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

func hasSample(scrape, series, want string) bool {
	got, ok := metricLine(scrape, series)
	return ok && got == want
}
