package cffake

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// A tunnel's connections are the connectors (cloudflared replicas) that
// serve it now. Cloudflare refuses to delete a tunnel that has any (error
// 1022); DELETE …/connections removes them, all or one client's, as
// `cloudflared tunnel cleanup` and `tunnel delete --force` do. Tests
// connect and disconnect connectors with Connect and Disconnect.

// Connect records a connector of the tunnel; it fails for a tunnel that
// does not exist or is deleted, as the edge refuses such a connector.
func (f *Fake) Connect(accountID, tunnelID, clientID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tunnel(accountID, tunnelID)
	if t == nil || !t.deleted.IsZero() {
		return fmt.Errorf("account %q has no live tunnel %q", accountID, tunnelID)
	}
	if t.connections == nil {
		t.connections = map[string]time.Time{}
	}
	t.connections[clientID] = now()
	return nil
}

// Disconnect forgets a connector of the tunnel, as when it stops.
func (f *Fake) Disconnect(accountID, tunnelID, clientID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.tunnel(accountID, tunnelID); t != nil {
		delete(t.connections, clientID)
	}
}

// Connections are the client IDs of the tunnel's connectors, sorted.
func (f *Fake) Connections(accountID, tunnelID string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tunnel(accountID, tunnelID)
	if t == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(t.connections))
}

type connectionJSON struct {
	ID    string     `json:"id"`
	RunAt time.Time  `json:"run_at"`
	Conns []struct{} `json:"conns"`
}

func (f *Fake) listConnections(t *tunnel, _ []byte) (reply, error) {
	out := []connectionJSON{}
	for _, id := range slices.Sorted(maps.Keys(t.connections)) {
		out = append(out, connectionJSON{ID: id, RunAt: t.connections[id], Conns: []struct{}{}})
	}
	return reply{result: out}, nil
}

// cleanupConnections removes the connector the client_id query names, or
// every one.
func (f *Fake) cleanupConnections(r *http.Request, body []byte) (reply, error) {
	clientID := r.URL.Query().Get("client_id")
	return f.tunnelEndpoint(true, func(t *tunnel, _ []byte) (reply, error) {
		if clientID != "" {
			delete(t.connections, clientID)
		} else {
			clear(t.connections)
		}
		return reply{result: map[string]any{}}, nil
	})(r, body)
}
