// This file implements the -encoded-slashes flag.

package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// AddEncodedSlashesFlag adds -encoded-slashes: what an encoded slash or
// backslash in a request path means on listeners whose Gateway does not
// say (dataplane.Options.EncodedSlashes). Its value is one of
// proxycfg.SlashesReject (the default), SlashesDecode or SlashesKeep, in
// any case.
func AddEncodedSlashesFlag(fs *flag.FlagSet) *string {
	v := &slashesValue{s: proxycfg.SlashesReject}
	fs.Var(v, "encoded-slashes", "what %2F, %5C and \\ in a request path mean where the Gateway's GatewayConfig does not say: "+
		"reject (400; the default), decode (read as '/' before routing) or keep (data inside a path element; a backend that decodes them may serve what another rule covers)")
	return &v.s
}

// slashesValue is -encoded-slashes, kept in the spelling of proxycfg.
type slashesValue struct{ s string }

func (v *slashesValue) String() string {
	if v == nil {
		return ""
	}
	return v.s
}

func (v *slashesValue) Set(s string) error {
	for _, m := range []string{proxycfg.SlashesReject, proxycfg.SlashesDecode, proxycfg.SlashesKeep} {
		if strings.EqualFold(s, m) {
			v.s = m
			return nil
		}
	}
	return fmt.Errorf("want reject, decode or keep, not %q", s)
}
