// This file reads the tunnel ID from a tunnel token.

package cloudflare

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// TunnelIDOfToken reads the tunnel ID from a tunnel token, what
// cloudflared takes as --token: base64 of {"a": account, "t": tunnel,
// "s": secret}. Surrounding white space is ignored, as a Secret written
// by hand often ends with a newline.
func TunnelIDOfToken(token string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
	var tok struct {
		Tunnel string `json:"t"`
	}
	if err == nil {
		err = json.Unmarshal(b, &tok)
	}
	if err == nil && tok.Tunnel == "" {
		err = errors.New("no tunnel ID (t)")
	}
	if err != nil {
		return "", err
	}
	return tok.Tunnel, nil
}
