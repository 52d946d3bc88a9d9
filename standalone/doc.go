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
// translated config to the data plane, and reloads it as the files
// change: file events (inotify on Linux), debounced, tell it at once,
// and polling stays as the fallback (watch.go). A reload costs what
// changed: files and YAML documents unchanged keep their objects
// (files.go), statuses are kept on the objects as an API server keeps
// them (status.go), so translate.Cache patches its last translation, the
// config's version is computed by an Encoder that encodes only the
// elements that changed, and the proxy applies the routes changed as
// patches.
package standalone
