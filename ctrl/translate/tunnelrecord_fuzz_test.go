package translate_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Whatever a Gateway's status holds, a record read from it names a tunnel
// ID made of a UUID's characters only (it goes into API paths), the one
// its message starts with.
func FuzzTunnelRecord(f *testing.F) {
	f.Add("Created", "tunnel 6ff42ae2-765d-4adf-8112-31c55c1551ef was created by tunnelgate")
	f.Add("CreatedDeleteWithGateway", "tunnel 6FF42AE2 x")
	f.Add("Existing", "tunnel ../x y")
	f.Add("Existing", "tunnel ")
	f.Add("Created", "tunnel a/b?c=d#e")
	f.Fuzz(func(t *testing.T, reason, msg string) {
		g := gatewayWith(metav1.Condition{Type: translate.GatewayConditionTunnel, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
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
