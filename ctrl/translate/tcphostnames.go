// This file implements TCP listeners' public hostnames: the tcp-hostnames annotation.

package translate

import (
	"fmt"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TCP listeners' public hostnames. A TCP listener has no hostname in the
// Gateway API (the CRD refuses one: nothing in a TCP connection names a
// host), yet a tunnel carries streams only for a public hostname: the
// one cloudflared's ingress rule and the visitor's `cloudflared access
// tcp --hostname` name. So whoever owns the listeners gives each TCP
// listener that the tunnel is to carry a hostname, with an annotation on
// the Gateway (for its listeners) or on the ListenerSet (for its
// entries):
//
//	tunnelgate.dev/tcp-hostnames: "ssh=ssh.example.com, postgres=db.example.com"
//
// Each entry is a TCP listener's name, "=", and a hostname (exact or a
// wildcard, as a listener's hostname may be). The oldest TCPRoute on the
// listener serves it; in the cluster the listener serves its port as
// before, whatever the annotation says. The owner of the listeners
// decides, as it decides an HTTP listener's hostname: a route cannot
// claim a public hostname for a TCP listener.
//
// When the annotation is present, the object gets the condition
// ConditionTCPHostnames: True naming what each listener is published as,
// or False (reason InvalidTCPHostnames) naming each entry that is not
// taken (not name=hostname, a hostname that is not valid, a listener
// that does not exist or is not TCP, a listener named twice); the valid
// entries are taken all the same.
const (
	AnnotationTCPHostnames = "tunnelgate.dev/tcp-hostnames"
	ConditionTCPHostnames  = "tunnelgate.dev/TCPHostnames"

	reasonTCPHostnames        = "Published"
	reasonInvalidTCPHostnames = "InvalidTCPHostnames"
)

// tcpHostnames reads the annotation's value (value, set when present)
// for listeners, the TCP listeners' owner's: it sets each named TCP
// listener's publicHost and reports on c.
func tcpHostnames(value string, set bool, listeners []*listenerInfo, c *conds) {
	if !set {
		return
	}
	var taken, problems []string
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, host, ok := strings.Cut(entry, "=")
		name, host = strings.TrimSpace(name), strings.ToLower(strings.TrimSpace(host))
		i := slices.IndexFunc(listeners, func(li *listenerInfo) bool { return li.name == name })
		switch {
		case !ok || name == "" || host == "":
			problems = append(problems, fmt.Sprintf("%q is not listener=hostname", entry))
		case !validHostname(host):
			problems = append(problems, fmt.Sprintf("listener %s: %q is not a valid DNS name or wildcard", name, host))
		case i < 0:
			problems = append(problems, fmt.Sprintf("listener %s: there is no such listener", name))
		case listeners[i].protocol != gwv1.TCPProtocolType:
			problems = append(problems, fmt.Sprintf("listener %s: protocol %s, not TCP (its routes' hostnames come from its own)", name, listeners[i].protocol))
		case listeners[i].publicHost != "":
			problems = append(problems, fmt.Sprintf("listener %s: named again, as %s (it is published as %s)", name, host, listeners[i].publicHost))
		default:
			listeners[i].publicHost = host
			taken = append(taken, name+" as "+host)
		}
	}
	if len(problems) > 0 {
		c.set(ConditionTCPHostnames, false, reasonInvalidTCPHostnames, AnnotationTCPHostnames+": "+joinLimited(problems))
		return
	}
	msg := "no TCP listener is published"
	if len(taken) > 0 {
		msg = "public hostnames, where a tunnel carries the listeners: " + strings.Join(taken, ", ")
	}
	c.set(ConditionTCPHostnames, true, reasonTCPHostnames, msg)
}
