// This file defines AccessKeySource, where the Access teams' keys come
// from.

package controller

import (
	"slices"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// AccessKeySource is where the Access teams' keys come from
// (*accesskeys.Fetcher): told the teams in use, it fetches them, and
// hands translate what it has.
type AccessKeySource interface {
	Want(domains []string)
	Keys() map[string]*translate.AccessKeys
}

// accessTeams are the team domains the policies name, sorted, once each.
func accessTeams(policies []*v1alpha1.AccessPolicy) []string {
	var out []string
	for _, p := range policies {
		if d := p.Spec.TeamDomain; !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
