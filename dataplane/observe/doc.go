// Package observe is how the proxy reports on the requests it serves:
// counters and latency histograms per route rule and per cluster.
//
// The idea: the request path only records. It bumps atomic counters in
// plain structs the proxy keeps (RuleStats, UpstreamStats) and moves on;
// everything that costs, such as turning the counts into metric families,
// happens off the request path, at scrape time.
//
// The package knows nothing of the proxy's types: package dataplane
// makes the stats, keeps them across config loads and bumps them.
//
// Files:
//
//   - stats.go: status classes, the latency Histogram, RuleStats and
//     UpstreamStats.
package observe
