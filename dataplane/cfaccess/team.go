// This file implements team domains and their URLs.

package cfaccess

import (
	"fmt"
	"regexp"
)

// TeamSuffix ends every Access team domain: a team is
// "<name>.cloudflareaccess.com".
const TeamSuffix = ".cloudflareaccess.com"

// TeamDomainPattern is a team domain: one DNS label, then TeamSuffix.
// The AccessPolicy CRD's teamDomain has this pattern (config/crd's test
// holds them equal).
const TeamDomainPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.cloudflareaccess\.com$`

var teamDomain = regexp.MustCompile(TeamDomainPattern)

// CheckTeamDomain says why domain is not an Access team domain, or nil.
// Keys are fetched from the team's domain, so nothing else may be named:
// a policy must not make the controller fetch from an arbitrary host.
func CheckTeamDomain(domain string) error {
	if len(domain) > 253 || !teamDomain.MatchString(domain) {
		return fmt.Errorf("%q is not an Access team domain (<team>%s)", domain, TeamSuffix)
	}
	return nil
}

// Issuer is the iss claim of the team's tokens.
func Issuer(domain string) string { return "https://" + domain }

// CertsURL is where the team publishes its signing keys: the certs
// document ParseKeys reads.
func CertsURL(domain string) string { return "https://" + domain + "/cdn-cgi/access/certs" }
