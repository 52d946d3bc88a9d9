// Package dataplane is the tunnelgate proxy: the request pipeline built
// around the matcher. It will apply route filters, choose weighted backends
// and balance across their endpoints, handle timeouts, retries, WebSocket and
// gRPC, pool upstream transports, and swap in new config from the controller
// atomically while keeping the last good config when the controller is away.
package dataplane
