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
// The proxy of BenchmarkProxyMemory is measured in the state users
// reach: every endpoint of the config points at a loopback backend the
// benchmark runs, every route gets a request (Host and path of its
// match), and the resident set is read once that traffic has settled and
// again after a first scrape of /metrics and after several more, as a
// Prometheus server scraping every 15 s would. It also reports what a
// scrape weighs (plain and gzipped) and takes. Its endpoints are either
// shared (every cluster's two endpoints the same two addresses, so two
// pools hold every connection) or distinct (each endpoint an address of
// its own in 127.0.0.0/8, as Pods have, so the pools hold a connection
// for each route that had a request): the second is the memory of a
// proxy whose every route has traffic.
//
// Run with `go test ./bench/memory -run '^$' -bench . -benchtime 1x`; the
// benchmarks report MiB-rss (after traffic, for BenchmarkProxyMemory),
// MiB-rss-idle (before it), MiB-rss-scraped-once and MiB-rss-scraped
// (after one and after several metrics scrapes), MiB-peak, ms-to-serve,
// and for BenchmarkProxyMemory scrape-bytes, scrape-gzip-bytes,
// scrape-ms and pool-conns. Linux only (/proc).
package memory
