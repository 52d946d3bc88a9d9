// Package kubeenv runs a real Kubernetes control plane for integration
// tests: etcd and kube-apiserver (and, on request, kube-controller-manager)
// as child processes on loopback, with the Gateway API CRDs and tunnelgate's
// own CRDs installed. Tests talk to it with client-go as they would to a
// cluster; there are no fake clients.
//
// The binaries are not downloaded: `make testenv` builds them from the Go
// module proxy (module test/tools) into a cache directory keyed by their
// versions, and Start only looks there. Each Env owns a temporary directory
// (certificates, kubeconfig, etcd data, process logs) and its own loopback
// ports, so several test packages can run at once (go test -p N).
//
// Children are started with a parent-death signal on Linux, so they die with
// the test process even when a test panics or go test kills it on timeout;
// the directory such a crash leaves behind is removed by the next Start.
//
// A package usually shares one Env between its tests (see Shared), started
// by the first test that needs it; a test that needs a control plane of its
// own (say, with the controller manager) calls StartT.
package kubeenv
