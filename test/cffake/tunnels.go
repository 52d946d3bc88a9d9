package cffake

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

type tunnel struct {
	id, name, configSrc string
	acct                *account
	secret              []byte
	created, deleted    time.Time
	config              json.RawMessage // the "config" object of the last PUT
	version             int
	configAt            time.Time
	// connections are the connectors connected now, by client ID, with
	// when each connected (Connect).
	connections map[string]time.Time
}

// Tunnel is a snapshot of a tunnel's state.
type Tunnel struct {
	ID, AccountID, Name string
	ConfigSrc           string    // "cloudflare" or "local"
	CreatedAt           time.Time //
	DeletedAt           time.Time // zero while not deleted
	ConfigVersion       int       // 0 until the first configuration PUT
}

// AddTunnel adds an existing, remotely managed tunnel to an account added
// before.
func (f *Fake) AddTunnel(accountID, id, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	secret := make([]byte, 32)
	rand.Read(secret)
	t := now()
	f.tunnels = append(f.tunnels, &tunnel{id: id, name: name, configSrc: "cloudflare",
		acct: f.mustAccount(accountID), secret: secret, created: t, configAt: t})
}

// DeleteTunnel marks a tunnel deleted, as deleting it through the API or
// the dashboard does; it reports whether the tunnel existed.
func (f *Fake) DeleteTunnel(accountID, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tunnel(accountID, id)
	if t == nil {
		return false
	}
	if t.deleted.IsZero() {
		t.deleted = now()
	}
	return true
}

// Tunnels returns the account's tunnels, deleted ones included, oldest first.
func (f *Fake) Tunnels(accountID string) []Tunnel {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Tunnel
	for _, t := range f.tunnels {
		if t.acct.id == accountID {
			out = append(out, Tunnel{ID: t.id, AccountID: accountID, Name: t.name, ConfigSrc: t.configSrc,
				CreatedAt: t.created, DeletedAt: t.deleted, ConfigVersion: t.version})
		}
	}
	return out
}

// TunnelConfig returns the tunnel's configuration (the "config" object last
// PUT) and its version; nil and 0 if there is none.
func (f *Fake) TunnelConfig(accountID, tunnelID string) (json.RawMessage, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tunnel(accountID, tunnelID)
	if t == nil || t.config == nil {
		return nil, 0
	}
	return append(json.RawMessage(nil), t.config...), t.version
}

func (f *Fake) tunnel(accountID, id string) *tunnel {
	for _, t := range f.tunnels {
		if t.acct.id == accountID && t.id == id {
			return t
		}
	}
	return nil
}

func (f *Fake) routeTunnels() {
	const base = "/accounts/{account_id}/cfd_tunnel"
	f.handle("POST "+base, f.createTunnel)
	f.handle("GET "+base, f.listTunnels)
	f.handle("GET "+base+"/{tunnel_id}", f.tunnelEndpoint(false, f.getTunnel))
	f.handle("PATCH "+base+"/{tunnel_id}", f.tunnelEndpoint(true, f.editTunnel))
	f.handle("DELETE "+base+"/{tunnel_id}", f.tunnelEndpoint(true, f.deleteTunnel))
	f.handle("GET "+base+"/{tunnel_id}/token", f.tunnelEndpoint(true, f.tunnelToken))
	f.handle("GET "+base+"/{tunnel_id}/configurations", f.tunnelEndpoint(false, f.getTunnelConfig))
	f.handle("PUT "+base+"/{tunnel_id}/configurations", f.tunnelEndpoint(true, f.putTunnelConfig))
	f.handle("GET "+base+"/{tunnel_id}/connections", f.tunnelEndpoint(false, f.listConnections))
	f.handle("DELETE "+base+"/{tunnel_id}/connections", f.cleanupConnections)
}

// tunnelEndpoint resolves the path's tunnel. Reads still see a deleted
// tunnel (with deleted_at set); anything else treats it as gone.
func (f *Fake) tunnelEndpoint(live bool, ep func(*tunnel, []byte) (reply, error)) endpoint {
	return func(r *http.Request, body []byte) (reply, error) {
		acct := f.account(r.PathValue("account_id"))
		if acct == nil {
			return reply{}, notRoutable(r.URL.Path)
		}
		t := f.tunnel(acct.id, r.PathValue("tunnel_id"))
		if t == nil || live && !t.deleted.IsZero() {
			return reply{}, newErr(http.StatusNotFound, codeTunnelNotFound, "Tunnel not found.")
		}
		return ep(t, body)
	}
}

type tunnelInput struct {
	Name         *string `json:"name"`
	ConfigSrc    *string `json:"config_src"`
	TunnelSecret *string `json:"tunnel_secret"`
}

func (f *Fake) createTunnel(r *http.Request, body []byte) (reply, error) {
	acct := f.account(r.PathValue("account_id"))
	if acct == nil {
		return reply{}, notRoutable(r.URL.Path)
	}
	var in tunnelInput
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return reply{}, newErr(http.StatusBadRequest, codeInvalidRequest, "Invalid request: name is required")
	}
	src := "local" // the API's default when config_src is absent
	if in.ConfigSrc != nil {
		src = *in.ConfigSrc
	}
	if src != "local" && src != "cloudflare" {
		return reply{}, newErr(http.StatusBadRequest, codeInvalidRequest, "Invalid request: config_src must be local or cloudflare")
	}
	secret, err := tunnelSecret(in.TunnelSecret)
	if err != nil {
		return reply{}, err
	}
	if err := f.checkTunnelName(acct, *in.Name, ""); err != nil {
		return reply{}, err
	}
	t := &tunnel{id: newUUID(), name: *in.Name, configSrc: src, acct: acct, secret: secret, created: now()}
	t.configAt = t.created
	f.tunnels = append(f.tunnels, t)
	return reply{result: t.json()}, nil
}

// tunnelSecret decodes a given secret or makes one; Cloudflare wants at
// least 32 bytes, base64-encoded.
func tunnelSecret(in *string) ([]byte, error) {
	if in == nil {
		b := make([]byte, 32)
		rand.Read(b)
		return b, nil
	}
	b, err := base64.StdEncoding.DecodeString(*in)
	if err != nil || len(b) < 32 {
		return nil, newErr(http.StatusBadRequest, codeInvalidRequest,
			"Invalid request: tunnel_secret must be at least 32 bytes, base64-encoded")
	}
	return b, nil
}

// checkTunnelName enforces one live tunnel per name in an account.
func (f *Fake) checkTunnelName(acct *account, name, self string) error {
	for _, t := range f.tunnels {
		if t.acct == acct && t.id != self && t.deleted.IsZero() && t.name == name {
			return newErr(http.StatusConflict, codeTunnelNameTaken,
				"You already have a tunnel with this name. Delete the existing tunnel, or choose a different name for your new tunnel")
		}
	}
	return nil
}

func (f *Fake) listTunnels(r *http.Request, _ []byte) (reply, error) {
	acct := f.account(r.PathValue("account_id"))
	if acct == nil {
		return reply{}, notRoutable(r.URL.Path)
	}
	q := r.URL.Query()
	var fs filters[*tunnel]
	fs.add(func(t *tunnel) bool { return t.acct == acct })
	if v := q.Get("name"); v != "" {
		fs.add(func(t *tunnel) bool { return t.name == v })
	}
	if v := q.Get("uuid"); v != "" {
		fs.add(func(t *tunnel) bool { return strings.EqualFold(t.id, v) })
	}
	if v := q.Get("include_prefix"); v != "" {
		fs.add(func(t *tunnel) bool { return strings.HasPrefix(t.name, v) })
	}
	if v := q.Get("exclude_prefix"); v != "" {
		fs.add(func(t *tunnel) bool { return !strings.HasPrefix(t.name, v) })
	}
	if v := q.Get("status"); v != "" {
		fs.add(func(*tunnel) bool { return v == "inactive" })
	}
	deleted, set, err := boolParam(q, "is_deleted")
	if err != nil {
		return reply{}, err
	}
	if set {
		fs.add(func(t *tunnel) bool { return !t.deleted.IsZero() == deleted })
	}
	page, info, err := paginate(q, fs.apply(f.tunnels, false), tunnelPages)
	if err != nil {
		return reply{}, err
	}
	out := make([]tunnelJSON, len(page))
	for i, t := range page {
		out[i] = t.json()
	}
	return reply{result: out, info: info}, nil
}

func (f *Fake) getTunnel(t *tunnel, _ []byte) (reply, error) { return reply{result: t.json()}, nil }

func (f *Fake) editTunnel(t *tunnel, body []byte) (reply, error) {
	var in tunnelInput
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	if in.Name != nil {
		if strings.TrimSpace(*in.Name) == "" {
			return reply{}, newErr(http.StatusBadRequest, codeInvalidRequest, "Invalid request: name must not be empty")
		}
		if err := f.checkTunnelName(t.acct, *in.Name, t.id); err != nil {
			return reply{}, err
		}
	}
	var secret []byte
	if in.TunnelSecret != nil {
		var err error
		if secret, err = tunnelSecret(in.TunnelSecret); err != nil {
			return reply{}, err
		}
	}
	if in.Name != nil {
		t.name = *in.Name
	}
	if secret != nil {
		t.secret = secret
	}
	return reply{result: t.json()}, nil
}

func (f *Fake) deleteTunnel(t *tunnel, _ []byte) (reply, error) {
	if len(t.connections) > 0 {
		return reply{}, newErr(http.StatusBadRequest, codeTunnelActive,
			"Cannot delete tunnel because it has active connections. Clean up its connections first.")
	}
	t.deleted = now()
	return reply{result: t.json()}, nil
}

// tokenFields are a tunnel token's: what cloudflared takes as --token is
// base64 of this JSON.
type tokenFields struct {
	A string `json:"a"` // account tag
	T string `json:"t"` // tunnel ID
	S string `json:"s"` // base64 secret
}

// tunnelToken is what cloudflared takes as --token.
func (f *Fake) tunnelToken(t *tunnel, _ []byte) (reply, error) {
	b, err := json.Marshal(tokenFields{t.acct.id, t.id, base64.StdEncoding.EncodeToString(t.secret)})
	if err != nil {
		return reply{}, err
	}
	return reply{result: base64.StdEncoding.EncodeToString(b)}, nil
}

type tunnelConfigJSON struct {
	TunnelID  string          `json:"tunnel_id"`
	AccountID string          `json:"account_id"`
	Version   int             `json:"version"`
	Config    json.RawMessage `json:"config"`
	Source    string          `json:"source"`
	CreatedAt time.Time       `json:"created_at"`
}

func (t *tunnel) configJSON() tunnelConfigJSON {
	cfg := t.config
	if cfg == nil {
		cfg = json.RawMessage("null")
	}
	return tunnelConfigJSON{TunnelID: t.id, AccountID: t.acct.id, Version: t.version,
		Config: cfg, Source: t.configSrc, CreatedAt: t.configAt}
}

func (f *Fake) getTunnelConfig(t *tunnel, _ []byte) (reply, error) {
	return reply{result: t.configJSON()}, nil
}

// putTunnelConfig replaces the whole document, as the real endpoint does;
// every accepted PUT is a new version.
func (f *Fake) putTunnelConfig(t *tunnel, body []byte) (reply, error) {
	var in struct {
		Config json.RawMessage `json:"config"`
	}
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	cfg, err := validateTunnelConfig(in.Config)
	if err != nil {
		return reply{}, newErr(http.StatusBadRequest, codeTunnelConfig,
			fmt.Sprintf("Bad Configuration: Validation failed: %v", err))
	}
	t.config = cfg
	t.version++
	t.configAt = now()
	t.configSrc = "cloudflare"
	return reply{result: t.configJSON()}, nil
}

type tunnelJSON struct {
	ID              string     `json:"id"`
	AccountTag      string     `json:"account_tag"`
	Name            string     `json:"name"`
	CreatedAt       time.Time  `json:"created_at"`
	DeletedAt       *time.Time `json:"deleted_at"`
	ConfigSrc       string     `json:"config_src"`
	RemoteConfig    bool       `json:"remote_config"`
	Status          string     `json:"status"`
	TunType         string     `json:"tun_type"`
	Connections     []struct{} `json:"connections"`
	ConnsActiveAt   *time.Time `json:"conns_active_at"`
	ConnsInactiveAt *time.Time `json:"conns_inactive_at"`
	Metadata        struct{}   `json:"metadata"`
}

func (t *tunnel) json() tunnelJSON {
	j := tunnelJSON{ID: t.id, AccountTag: t.acct.id, Name: t.name, CreatedAt: t.created,
		ConfigSrc: t.configSrc, RemoteConfig: t.configSrc == "cloudflare",
		Status: "inactive", TunType: "cfd_tunnel", Connections: []struct{}{}}
	if len(t.connections) > 0 {
		j.Status = "healthy"
	}
	if !t.deleted.IsZero() {
		d := t.deleted
		j.DeletedAt = &d
	}
	return j
}

// CheckTunnelToken says which tunnel a connector's token (what tunnelToken
// hands out) names, as the edge authenticates a connector: the account and
// tunnel must exist, the tunnel must not be deleted, and the secret must be
// the tunnel's.
func (f *Fake) CheckTunnelToken(token string) (accountID, tunnelID string, err error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
	if err != nil {
		return "", "", fmt.Errorf("tunnel token is not base64: %v", err)
	}
	var fields tokenFields
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "", "", fmt.Errorf("tunnel token is not a JSON object: %v", err)
	}
	secret, err := base64.StdEncoding.DecodeString(fields.S)
	if err != nil {
		return "", "", fmt.Errorf("tunnel token's secret is not base64: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tunnel(fields.A, fields.T)
	switch {
	case t == nil:
		return "", "", fmt.Errorf("account %q has no tunnel %q", fields.A, fields.T)
	case !t.deleted.IsZero():
		return "", "", fmt.Errorf("tunnel %s is deleted", fields.T)
	case subtle.ConstantTimeCompare(secret, t.secret) != 1:
		return "", "", fmt.Errorf("tunnel %s: wrong secret", fields.T)
	}
	return fields.A, fields.T, nil
}
