// Package ctrl is the tunnelgate controller. It will watch Gateway API and
// core objects through client-go informers, turn a snapshot of them into
// proxy config, statuses, tunnel ingress and DNS records with a pure
// translate step, serve that config to the proxies, and, as the elected
// leader only, write statuses and sync Cloudflare.
package ctrl
