// Package ctrl is the tunnelgate controller's room; its packages are the
// controller's parts, and it has no code of its own.
//
// The controller watches Gateway API and core objects through client-go
// informers and turns a snapshot of them, with a pure translation, into
// the proxies' config, the statuses of the objects it manages, the public
// hostnames each tunnel carries, and events. Every replica serves that
// config to the proxies; only the elected leader writes statuses and
// events and keeps Cloudflare in step.
//
//   - translate is the pure translation, where the Gateway API's
//     semantics live; standalone mode runs it too.
//   - controller watches, snapshots, translates and writes: the sync
//     loop, statuses, events, leader election, the admin listener.
//   - configserver serves the latest config to the proxies' long polls;
//     sessionkeys stands in front of it, adding the session keys every
//     proxy shares.
//   - cloudflare keeps each tunnel's ingress document and DNS records in
//     step with what the leader hands it.
//   - provision renders a Gateway's dedicated data plane (Deployment,
//     Service, credentials Secret and the rest) from its GatewayConfig,
//     purely; planes applies those objects, puts hand edits back, prunes
//     them, and reads what the plane's Deployment and Pods say.
//   - accesskeys fetches the signing keys of the Cloudflare Access teams
//     that AccessPolicies name, which go to the proxies in their config.
//
// The controller command (cmd/tunnelgate) builds these and runs them.
package ctrl
