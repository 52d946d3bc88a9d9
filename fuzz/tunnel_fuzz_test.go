package fuzz

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// FuzzTunnelToken feeds TunnelIDOfToken whatever a user may put in a
// tunnel token Secret. It gives a tunnel ID or an error, never both,
// never a panic; and the ID it reads is the one a token made of it holds.
//
// Seeds (also in testdata/fuzz/FuzzTunnelToken): a token as Cloudflare
// hands it out, one with a trailing newline, one without a tunnel, JSON
// that is not an object, text that is not base64, nothing.
func FuzzTunnelToken(f *testing.F) {
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc","t":"6ff42ae2-765d-4adf-8112-31c55c1551ef","s":"c2VjcmV0"}`)))
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc","t":"tid","s":"c2VjcmV0"}`)) + "\n")
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc"}`)))
	f.Add(base64.StdEncoding.EncodeToString([]byte(`["t"]`)))
	f.Add("not base64!")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		id, err := cloudflare.TunnelIDOfToken(token)
		if (id == "") == (err == nil) {
			t.Fatalf("id %q and error %v: want exactly one", id, err)
		}
		if err != nil {
			return
		}
		b, _ := json.Marshal(map[string]string{"t": id})
		if again, err := cloudflare.TunnelIDOfToken(base64.StdEncoding.EncodeToString(b)); err != nil || again != id {
			t.Fatalf("a token holding %q reads as %q, %v", id, again, err)
		}
	})
}

// FuzzTunnelRecord feeds TunnelRecordOf whatever a Gateway's status may
// hold, since anyone with gateways/status can write it. A record read
// names a tunnel ID made of a UUID's characters only (it goes into API
// paths), the one its message starts with, and never asks to delete a
// tunnel tunnelgate did not create.
//
// Seeds (also in testdata/fuzz/FuzzTunnelRecord): the three reasons
// tunnelgate writes, an upper-case ID, a path, a query, an empty ID.
func FuzzTunnelRecord(f *testing.F) {
	f.Add("Created", "tunnel 6ff42ae2-765d-4adf-8112-31c55c1551ef was created by tunnelgate")
	f.Add("CreatedDeleteWithGateway", "tunnel 6FF42AE2 x")
	f.Add("Existing", "tunnel ../x y")
	f.Add("Existing", "tunnel ")
	f.Add("Created", "tunnel a/b?c=d#e")
	f.Fuzz(func(t *testing.T, reason, msg string) {
		g := &gwv1.Gateway{Status: gwv1.GatewayStatus{Conditions: []metav1.Condition{{
			Type: translate.GatewayConditionTunnel, Status: metav1.ConditionTrue, Reason: reason, Message: msg}}}}
		rec, ok := translate.TunnelRecordOf(g)
		if !ok {
			return
		}
		if rec.ID == "" || len(rec.ID) > 64 || strings.Trim(rec.ID, "0123456789abcdefABCDEF-") != "" {
			t.Fatalf("record %+v read from %q", rec, msg)
		}
		if !strings.HasPrefix(msg, "tunnel "+rec.ID) {
			t.Fatalf("ID %q is not the one %q names", rec.ID, msg)
		}
		if rec.DeleteWithGateway && !rec.Created {
			t.Fatalf("a tunnel not created by tunnelgate to be deleted: %+v", rec)
		}
	})
}
