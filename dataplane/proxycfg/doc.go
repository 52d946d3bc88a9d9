// Package proxycfg is what a proxy serves, as it goes from the controller
// (or a file) to the proxy: Gateway listeners, the routes bound to them
// with their rules, and the clusters those send traffic to.
//
// It is plain data that survives a JSON round trip, read strictly
// (DecodeConfig refuses an unknown field, so a proxy never silently
// ignores a setting it does not know), and it depends on nothing beyond
// the standard library: whoever writes a config (ctrl/translate,
// standalone mode) does not carry the proxy in with it. The proxy
// compiles a Config into what requests read (dataplane.Proxy.Load) and
// refuses it whole when anything in it is wrong.
//
// It also owns what a config's version is: Encoder computes the version,
// and the routes and clusters hashes it is made of, from the content,
// with the JSON of the config's lists, encoding only what changed since
// the last config it saw. The config server publishes those, and
// standalone mode and `tunnelgate proxy -config` stamp the version on
// what they load: no config is served with a version of its own.
//
// And it owns what a config says of itself: the clusters a rule names
// (Rule.Clusters, which a test holds to every field that names one), and
// the part of a config that proxies serving some of its listeners get
// (Config.Split), so that whoever cuts or trims a config keeps exactly
// the clusters its rules send to.
//
// A proxy that has a config is sent the next as a Delta from it, made
// from the Encoder's JSON of both: what changed, and runs of what did not.
//
// # Identities and stamps: how every layer tells what changed
//
// This is the one contract by which every layer that keeps work from one
// config to the next (translate's Cache, the Encoder and Delta, the
// proxy's apply, the matcher's Table.Update) tells what changed. Each
// layer's doc points here instead of stating a rule of its own.
//
// Each listener, route, rule and cluster of a config has an identity
// that does not depend on its position in the config or on where it is
// in memory (identity.go):
//
//   - a listener: its name (Listener.ID);
//   - a route: its kind, namespace and name (Route.ID, a RouteID);
//   - a rule: its route's identity and its name when it has one, else
//     its index among its route's rules (Route.RuleID, a RuleID), so a
//     route added, removed or moved never renumbers another's rules;
//   - a cluster: its name (Cluster.ID).
//
// A config holds each identity once (the proxy refuses two listeners or
// clusters of one name; translate writes each route object once).
//
// Each listener, route and cluster also has a content stamp (Stamp): the
// SHA-256 of its JSON, which the Encoder computes (JSONList.Sums).
// Elements with the same stamp are Equal, and Equal elements have the
// same stamp. A rule is stamped with its route (Rule.Equal compares it
// alone).
//
// Every layer reuses work by identity and stamp (or Equal, which says
// the same), never by pointer or by position: what it made for the
// element of an identity last time is reused when the element of that
// identity now is Equal to it (or has its stamp), and made again when
// not; an identity new to it is made, and one gone is dropped. So an
// element added or removed costs that element, wherever it sits, and
// what is reused never depends on how a config was built or whether its
// memory is shared. translate's Cache follows it for the API objects
// it reads: an object's identity is its kind, namespace, name and UID,
// and its stamp its resourceVersion (in standalone mode, a hash of its
// content). So do the Encoder (encode.go) and the proxy's patch
// (dataplane/patch.go). Where a layer still falls short, its doc says
// so (translate's patches take routes added or deleted by identity, but
// leave to a full translation those that meet other routes in a
// conflict, a claim or a cluster's place); that is what remains to be
// brought under this contract.
package proxycfg
