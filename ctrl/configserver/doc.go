// Package configserver hands the data-plane config to the proxies.
//
// The controller publishes every translation (Publish); each proxy
// watches with a long poll, GET /v1/config?version=V&wait=D. A request
// whose V differs from the published version is answered at once with
// the whole config; one that has it already is held until a new version
// is published, the wait ends (304 Not Modified) or the proxy goes away.
// So a proxy learns of a change as soon as it is published, and an idle
// proxy costs one parked request per wait, not a poll a second.
//
// Every controller replica runs a Server and publishes its own
// translations, which are the same for the same cluster state, so any
// replica can answer any proxy: a new proxy gets its config on connect
// and a leader election interrupts nothing. Before the first Publish a
// request waits as if its version were current, and ends in 304.
//
// Scopes. The shared proxies present the token of Options and read the
// config given to Publish. A Gateway with a dedicated data plane has
// proxies of its own, which present their plane's token and read only
// the config given for it to PublishPlanes: not the shared config, nor
// another plane's, and the shared token reads no plane's. Tenants'
// configs hold their routes, their Secrets' TLS keys and session keys
// (ctrl/sessionkeys derives a plane's from the shared ones), so a
// plane's proxies, or whoever takes their token, must not learn another
// tenant's. Each config is a scope with its own Encoder and its own
// held requests: a publish wakes only the requests held for the config
// that changed, and the long poll is the same code for all. A token
// opens one scope or none: a plane whose token is empty, is the shared
// one or is another plane's too is not served, and a plane that goes,
// or takes a new token, has its held requests refused.
//
// Cost. At 5,000 routes the config is megabytes of JSON and the
// controller publishes after every translation, mostly endpoint changes.
// Publish therefore encodes only what changed (proxycfg.Encoder, which
// also owns the version and hashes): each listener, route and cluster
// Equal to the one at its place last time reuses its JSON and hash, so
// an endpoint change costs one cluster's JSON and a pass of comparisons,
// which translate's outputs make quick by sharing what did not change.
// The document of a version is assembled once and gzipped once, by the
// first request for it, and every watcher is sent the same bytes, but a
// proxy that names the version it serves, one of the last published, is
// sent a delta from it instead (delta.go): a route changed is a few
// hundred bytes for it to read, not megabytes.
//
// The proxy's side, and the names both sides share, are in
// dataplane/configwatch; the protocol is described for users in
// docs/config-distribution.md.
package configserver
