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
package proxycfg
