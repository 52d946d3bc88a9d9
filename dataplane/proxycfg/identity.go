// This file implements identities and stamps: what names an element wherever it sits, and what says its content.

package proxycfg

import (
	"crypto/sha256"
	"strconv"
)

// RouteID is a route's identity (see the package doc): its kind,
// namespace and name. An HTTPRoute and a GRPCRoute of one name are two
// routes.
type RouteID struct {
	Kind      RouteKind
	Namespace string
	Name      string
}

// ID is r's identity.
func (r *Route) ID() RouteID { return RouteID{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name} }

// String is "kind namespace/name".
func (id RouteID) String() string { return string(id.Kind) + " " + id.Namespace + "/" + id.Name }

// RuleID is a rule's identity: its route's, and the rule's name (its
// sectionName) when it has one, else its index among the route's rules.
// A named rule keeps its identity when rules before it come or go; an
// unnamed one is numbered within its route only, so a route added or
// removed does not renumber another's rules.
type RuleID struct {
	Route RouteID
	// Name is the rule's name; "" when it has none.
	Name string
	// Index is the rule's index in Route.Rules when it has no name, and
	// -1 when it has one.
	Index int
}

// RuleID is the identity of r's rule i.
func (r *Route) RuleID(i int) RuleID {
	id := RuleID{Route: r.ID(), Index: i}
	if n := r.Rules[i].Name; n != "" {
		id.Name, id.Index = n, -1
	}
	return id
}

// String is the route's identity and "/" with the rule's name, or "#"
// with its index.
func (id RuleID) String() string {
	if id.Index < 0 {
		return id.Route.String() + "/" + id.Name
	}
	return id.Route.String() + "#" + strconv.Itoa(id.Index)
}

// ID is l's identity: its name, which a config holds once.
func (l *Listener) ID() string { return l.Name }

// ID is c's identity: its name, which a config holds once.
func (c *Cluster) ID() string { return c.Name }

// Stamp is an element's content stamp: the SHA-256 of its JSON as
// json.Marshal writes it. Elements with the same stamp are Equal. The
// Encoder computes the stamp of every listener, route and cluster
// (JSONList.Sums), and Delta keeps elements by theirs.
type Stamp = [sha256.Size]byte
