// Package standalone runs tunnelgate without a cluster: it reads Gateway
// API YAML from files, translates it with the same translate as the
// controller, and serves it through the data plane.
//
// Load turns files into a translate.Snapshot. With no API server in
// between, it does the API server's share itself: strict decoding, the
// defaults of the Gateway API CRDs and of the core kinds, and the metadata
// (namespace, generation, creationTimestamp, uid) every stored object has,
// made deterministic so that the same files always translate the same.
//
// Describe and NotReady print the statuses translate computed, as kubectl
// describe would show them on a cluster. Serving (serve.go) feeds the
// translated config to the data plane.
package standalone
