// Package planes keeps each dedicated Gateway's data plane applied in the
// cluster: the objects ctrl/provision renders for it, and its credentials
// Secret.
//
// It is the controller's second worker, with a queue of its own keyed by
// Gateway, so applying a hundred planes never holds up a translation:
//
//	leader's sync ──Update(wanted, retired)──▶ queue (one key per Gateway) ──▶ workers
//	owned objects' informers ──a change not made by us──┘
//	worker: credentials Secret ─▶ provision.Objects ─▶ server-side apply ─▶ prune
//
// Rules it keeps:
//   - Every object is applied with server-side apply, field manager
//     provision.ManagedBy, forced: a field set by hand that the plane sets
//     is put back at once (the owned objects' informers see the edit); a
//     field the plane leaves alone (an annotation a tool adds) stays.
//   - An object is applied again only when its rendering changed or it was
//     changed by someone else: an apply's own echo (the resourceVersion it
//     returned) and status-only updates are not changes.
//   - What a plane no longer renders (a HorizontalPodAutoscaler after
//     autoscaling is removed) is deleted.
//   - A plane is deleted only when its Gateway says it wants none (no
//     GatewayConfig, or one with dataPlane Shared): a Gateway refused for
//     a mistake (its GatewayConfig deleted by accident) keeps its proxies,
//     which keep serving their last config. A Gateway being deleted has
//     its plane deleted at once, so its connectors leave its tunnel before
//     the tunnel is cleaned up (a finalizer may hold the Gateway a while);
//     its Secrets go with it through ownerReferences, by the garbage
//     collector, as a Gateway back on the shared proxies keeps its
//     credentials Secret until it goes, since the controller may not
//     delete Secrets.
//   - The config token in a credentials Secret is made once, at random,
//     and kept (also while the informer has not shown the Secret yet);
//     so are the relay's credentials of a plane the shared
//     proxies relay to (relaycert.go), made anew only near their end or
//     when broken; the Secret's other keys follow the controller.
//   - Nothing is done unless this replica leads (Update with leading
//     false): two writers would fight over every field.
package planes
