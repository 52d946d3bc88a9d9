// Package configwatch keeps a proxy's config in step with the
// controller's, and defines what the two say to each other.
//
// The controller (ctrl/configserver) serves the config at GET /v1/config.
// A Client long-polls it: it sends the version it has, the server holds
// the request until a different version is published (200 with the
// Document) or the wait ends (304), and the client asks again at once.
// So a change reaches every proxy as soon as it is published, and an idle
// proxy costs the controller one held request a minute.
//
// The client names the version the proxy serves, and gets the next as a
// delta from it when the controller still has that version (only the
// changed routes and clusters to decode); it makes the next config from
// its own (proxycfg.Delta.Apply). It fetches, decodes, caches and backs
// off; applying is the proxy's (Proxy.Apply), and costs what changed: when only clusters'
// definitions differ from the config served, those clusters are replaced
// and routes are not recompiled, so an endpoint change at 5,000 routes
// replaces one endpoint set; when routes were edited in place, added or
// deleted, or listeners added, removed or edited, too, those alone are
// compiled (LoadRoutes). Otherwise the config is checked and compiled
// whole.
//
// When the controller cannot be reached, or answers with something the
// proxy cannot use, the proxy keeps serving its last good config and
// tries again after an exponential backoff with jitter (500 ms doubling
// to 30 s), so a fleet of proxies does not hammer a controller coming
// back. A config the proxy refuses is logged and counted, and the client
// asks again with that version, so the server holds it until the next
// one: no retry loop on a config that cannot work.
//
// With a cache file, every document applied is written there whole and
// atomically, by a goroutine apart, and Run loads it before asking the
// controller: a restarted
// proxy serves its last config at once, before (or without) the
// controller. The token, CA and client-certificate files are read for
// each request, so a rotated Secret takes effect without a restart.
package configwatch
