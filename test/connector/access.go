// This file implements a rule's originRequest.access check, as
// cloudflared's AccessJWTValidator runs it before the origin is dialled.

package connector

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
)

// accessConfig is a rule's originRequest.access, cloudflared's
// config.AccessConfig without its environment (FedRAMP teams are not
// modeled).
type accessConfig struct {
	Required bool     `json:"required,omitempty"`
	TeamName string   `json:"teamName"`
	AudTag   []string `json:"audTag"`
}

// accessJWTHeader carries the token Access signed for an approved
// visitor, which the edge sends and cloudflared checks.
const accessJWTHeader = "Cf-Access-Jwt-Assertion"

// accessCheck is a rule's installed check: cloudflared installs one only
// when the rule's own access has required: true.
type accessCheck struct {
	team     string
	certsURL string // where the team's keys are read: Options.AccessCerts, else Access's own URL
	policy   *cfaccess.Policy
	verifier *cfaccess.Verifier
}

// newAccessCheck is the check of a rule's access, nil when it installs
// none. Like cloudflared, it refuses (the whole document) a required
// check that names AUD tags without a team; a required check with
// neither is installed and fails every token.
func newAccessCheck(a *accessConfig, certs map[string]string) (*accessCheck, error) {
	if a == nil || !a.Required {
		return nil, nil
	}
	if a.TeamName == "" && len(a.AudTag) > 0 {
		return nil, fmt.Errorf("originRequest.access: teamName cannot be blank when audTag is present")
	}
	domain := a.TeamName + ".cloudflareaccess.com"
	url := certs[a.TeamName]
	if url == "" {
		url = cfaccess.CertsURL(domain)
	}
	return &accessCheck{team: a.TeamName, certsURL: url, policy: cfaccess.NewPolicy(domain, a.AudTag),
		verifier: cfaccess.NewVerifier(0, 1<<20)}, nil
}

// admit answers, as cloudflared's http2 protocol would, a request or
// stream its check refuses, and says whether it may go on: without a
// token 403; a token for none of the AUD tags 403; a token that does not
// verify (bad signature, wrong issuer, expired, keys unreadable) fails
// the check itself, which cloudflared answers 502.
func (a *accessCheck) admit(w http.ResponseWriter, r *http.Request) bool {
	token := r.Header.Get(accessJWTHeader)
	if token == "" {
		http.Error(w, "connector: access: no access token in request", http.StatusForbidden)
		return false
	}
	keys, err := a.keys()
	if err != nil {
		http.Error(w, "connector: access: "+err.Error(), http.StatusBadGateway)
		return false
	}
	switch _, why := a.verifier.Verify(token, keys, a.policy, time.Now()); why {
	case cfaccess.ReasonNone:
		return true
	case cfaccess.ReasonWrongAudience:
		http.Error(w, "connector: access: token for none of the rule's audTag", http.StatusForbidden)
	default:
		http.Error(w, "connector: access: token does not verify: "+why.String(), http.StatusBadGateway)
	}
	return false
}

// keys reads the team's certs document at every check (cloudflared keeps
// the keys and reads them again for a kid it does not know, which tells
// no token apart differently while a team's keys stay the same).
func (a *accessCheck) keys() (*cfaccess.Keys, error) {
	c := http.Client{Timeout: 5 * time.Second}
	res, err := c.Get(a.certsURL)
	if err != nil {
		return nil, fmt.Errorf("team %s's keys: %w", a.team, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("team %s's keys: %s answered %s", a.team, a.certsURL, res.Status)
	}
	doc, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("team %s's keys: %w", a.team, err)
	}
	keys, _, err := cfaccess.ParseKeys(doc)
	if err != nil {
		return nil, fmt.Errorf("team %s's keys: %w", a.team, err)
	}
	return keys, nil
}
