// Package controller is tunnelgate's Kubernetes controller: it watches the
// cluster and keeps everything that depends on it in step.
//
// It is the shape of k8s.io/sample-controller, reduced to one key:
//
//	informers ──any change──▶ queue ("sync", paced) ──▶ worker
//	worker: snapshot of the listers ─▶ translate.Translate ─▶ writers
//
// Every change to any watched object enqueues the same key at once. The
// queue holds it once, and once more while a sync runs, and a sync waits
// for its turn (Options.SyncInterval), so a lone change is synced without
// delay and a burst (a Helm install, a rollout) becomes a few
// translations. The worker copies the listers into a translate.Snapshot
// and runs the pure translation (ctrl/translate), whose Cache makes
// repeated translations cost what changed. The writers after it are
// idempotent:
//
//   - the proxy config is handed to a Publisher (the config server every
//     replica runs, so proxies are served whoever leads);
//   - statuses, the GatewayClass finalizer and events are written by the
//     leader only (leader.go), and only where the object's current status
//     differs from the translation (status.go), with conflict retries;
//   - each of our GatewayClasses with a tunnel is handed, by the leader,
//     to the Cloudflare syncer (ctrl/cloudflare) with its hostnames and
//     API token, and the tunnel tokens it gets back are stored in Secrets
//     (tunnels.go).
//
// Gateways with a dedicated data plane (translate's Output.Planes) are
// handed on three ways (planes.go): each plane's share of the config is
// published under the token of its credentials Secret; the leader hands
// the planes to apply, and the Gateways that want none, to the
// provisioner (ctrl/planes), whose reports of the planes' Deployments
// feed the next translation; and each plane's own tunnel goes to the
// Cloudflare syncer beside the classes' (tunnels.go). A Gateway with a
// tunnel of its own is held by a finalizer, when it goes, until the
// syncer has cleaned up after it (departures.go).
package controller
