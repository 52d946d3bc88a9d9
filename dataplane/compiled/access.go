// This file compiles a rule's Cloudflare Access.

package compiled

import (
	"errors"
	"fmt"
	"net/textproto"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// AccessCheck is a protected rule's Cloudflare Access: the team whose
// keys sign its tokens, what a token must say (the policy), and the
// headers the backend gets the identity in.
type AccessCheck struct {
	// Team is the team's domain, a key of the config's Access teams.
	Team   string
	Policy *cfaccess.Policy
	// Headers are the identity headers, canonical; "" sends none. Copies
	// a client sent are removed whether or not a name is set here.
	Headers AccessHeaders
}

// TokenHeader is where Cloudflare Access puts the token of a request it
// approved, and where the proxy passes on the token it verified.
const TokenHeader = "Cf-Access-Jwt-Assertion"

// AccessHeaders name the identity headers.
type AccessHeaders struct {
	Email, Subject, Groups, ServiceToken string
}

// List is the four names in one order, "" where unset: Email, Subject,
// Groups, ServiceToken.
func (h *AccessHeaders) List() [4]string {
	return [4]string{h.Email, h.Subject, h.Groups, h.ServiceToken}
}

// ValidateAccess checks an Access the way a rule's is checked, for
// translate to judge a policy once rather than rule by rule.
func ValidateAccess(a *proxycfg.Access) error {
	_, err := compileAccess(a)
	return err
}

// compileAccess checks a rule's Access and compiles it.
func compileAccess(a *proxycfg.Access) (*AccessCheck, error) {
	var errs []error
	if a.Team == "" {
		errs = append(errs, errors.New("team is empty"))
	}
	if len(a.Audiences) == 0 {
		errs = append(errs, errors.New("audiences is empty: a token must be issued for an application"))
	}
	for i, aud := range a.Audiences {
		if aud == "" {
			errs = append(errs, fmt.Errorf("audiences[%d] is empty", i))
		}
	}
	ac := &AccessCheck{Team: a.Team, Policy: cfaccess.NewPolicy(a.Team, a.Audiences)}
	ac.Policy.Require(a.Emails, a.EmailDomains, a.Groups, a.ServiceTokens)
	seen := map[string]string{}
	header := func(field, name string) string {
		if name == "" {
			return ""
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch {
		case !httpsyntax.IsToken(name):
			errs = append(errs, fmt.Errorf("%s %q is not a header name", field, name))
		case httpsyntax.HopByHop(canon) || canon == "Host" || canon == "Content-Length" || canon == "Cookie":
			errs = append(errs, fmt.Errorf("%s %q is a header the proxy does not let a filter set", field, name))
		case canon == TokenHeader:
			errs = append(errs, fmt.Errorf("%s %q is where the proxy sends the verified token itself", field, name))
		case seen[canon] != "":
			errs = append(errs, fmt.Errorf("%s %q is also %s", field, name, seen[canon]))
		}
		seen[canon] = field
		return canon
	}
	ac.Headers = AccessHeaders{
		Email:        header("emailHeader", a.EmailHeader),
		Subject:      header("subjectHeader", a.SubjectHeader),
		Groups:       header("groupsHeader", a.GroupsHeader),
		ServiceToken: header("serviceTokenHeader", a.ServiceTokenHeader),
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ac, nil
}
