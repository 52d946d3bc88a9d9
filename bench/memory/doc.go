// Package memory measures what a proxy holding a large config costs in
// memory, and how fast it serves after a restart, as the operating
// system sees it: a tunnelgate-proxy process (the binary proxy Pods run)
// is started on a config of thousands of routes, and its resident set
// (VmRSS) and peak (VmHWM) are read from /proc once it serves. Go's own heap figures leave out the
// runtime's overhead, fragmentation and what the garbage collector lets
// grow before it runs; the resident set is what a Pod's memory limit
// counts.
//
// The config is the one translate makes of a cluster of the shape below
// (Cluster), so the figures follow what the controller publishes, not a
// config written by hand: one Gateway listener, routes over a tenth as
// many hostnames, each route a rule with two matches (one with a header),
// a request header filter and two weighted backends, each backend a
// Service with two endpoints. The controller's side is measured in this
// process: the heap the cluster's objects, their translation and the
// published document hold, after a collection.
//
// Run with `go test ./bench/memory -run '^$' -bench . -benchtime 1x`; the
// benchmarks report MiB-rss (and after a metrics scrape), MiB-peak and
// ms-to-serve. Linux only (/proc).
package memory
