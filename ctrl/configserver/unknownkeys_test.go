package configserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A proxy's word that a team's tokens name keys its set lacks reaches
// OnUnknownAccessKeys for the teams of the config its token reads, and
// for no other: not another config's team, not one it made up, not past
// the first MaxUnknownAccessKeys names, not with a wrong token.
func TestUnknownAccessKeysOfTheProxysOwnConfig(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	ts := startServer(t, Options{Token: testToken, OnUnknownAccessKeys: func(team string) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, team)
	}})
	withTeams := func(cfg *proxycfg.Config, teams ...string) *proxycfg.Config {
		for _, d := range teams {
			cfg.AccessTeams = append(cfg.AccessTeams, proxycfg.AccessTeam{Domain: d, Keys: `{"keys":[]}`})
		}
		return cfg
	}
	ts.Publish(withTeams(smallConfig("10.0.0.1:80"), "shared.cloudflareaccess.com", "both.cloudflareaccess.com"))
	planes := twoPlanes("10.0.0.2:80", "10.0.0.3:80")
	a := planes["ns/a"]
	a.Config = withTeams(a.Config, "plane.cloudflareaccess.com", "both.cloudflareaccess.com")
	planes["ns/a"] = a
	ts.PublishPlanes(planes)

	many := make([]string, configwatch.MaxUnknownAccessKeys)
	for i := range many {
		many[i] = fmt.Sprintf("t%d.cloudflareaccess.com", i)
	}
	for _, c := range []struct {
		who, token, header string
		code               int
		want               []string
	}{
		{"shared", testToken, "shared.cloudflareaccess.com, plane.cloudflareaccess.com,made-up.cloudflareaccess.com,both.cloudflareaccess.com",
			http.StatusOK, []string{"shared.cloudflareaccess.com", "both.cloudflareaccess.com"}},
		{"plane a", tokenA, "shared.cloudflareaccess.com,plane.cloudflareaccess.com", http.StatusOK, []string{"plane.cloudflareaccess.com"}},
		{"plane b, no teams", tokenB, "plane.cloudflareaccess.com", http.StatusOK, nil},
		{"past the bound", testToken, strings.Join(append(many, "shared.cloudflareaccess.com"), ","), http.StatusOK, nil},
		{"a wrong token", "not-" + testToken, "shared.cloudflareaccess.com", http.StatusUnauthorized, nil},
	} {
		mu.Lock()
		asked = nil
		mu.Unlock()
		res, _ := ts.get(t, "?wait=0s", "Authorization", "Bearer "+c.token, configwatch.HeaderUnknownAccessKeys, c.header)
		mu.Lock()
		got := slices.Clone(asked)
		mu.Unlock()
		if res.StatusCode != c.code || !slices.Equal(got, c.want) {
			t.Errorf("%s: status %d, teams %q; want %d, %q", c.who, res.StatusCode, got, c.code, c.want)
		}
	}
}
