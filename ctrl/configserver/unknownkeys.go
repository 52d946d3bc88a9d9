// This file passes on the Access teams whose keys a proxy lacks.

package configserver

import (
	"slices"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
)

// unknownKeys passes on the Access teams a proxy names in
// configwatch.HeaderUnknownAccessKeys (value): those its tokens named a
// key of that the config's set lacks. Only teams of the config the proxy
// is granted count, and no more than configwatch.MaxUnknownAccessKeys:
// a proxy's word makes the controller fetch a team it already fetches,
// sooner, and nothing else.
func (s *Server) unknownKeys(g grant, value string) {
	if value == "" || s.onUnknownKeys == nil {
		return
	}
	doc, _, ok := g.look()
	if !ok || doc == nil {
		return
	}
	for i, team := range strings.Split(value, ",") {
		if i == configwatch.MaxUnknownAccessKeys {
			break
		}
		if team = strings.TrimSpace(team); slices.Contains(doc.teams, team) {
			s.log.Debug("a proxy met a token naming a key its team's set lacks", "team", team)
			s.onUnknownKeys(team)
		}
	}
}
