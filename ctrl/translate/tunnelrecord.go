// This file implements the record a Gateway with its own tunnel keeps on
// its status.

package translate

import (
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A Gateway with a tunnel of its own says on its status which tunnel that
// is and whether tunnelgate created it, in the condition
// GatewayConditionTunnel. The condition is also the record the controller
// reads when the Gateway is deleted: Cloudflare keeps no note of who
// created a tunnel, and the GatewayConfig that named it may be gone by
// then (a namespace deleted at once). So a tunnel is deleted with its
// Gateway only when this record says tunnelgate created it for the
// Gateway, and deleteWithGateway was set.
//
// The message starts "tunnel <ID> ", which TunnelRecordOf reads back; the
// reason says the rest.
//
// A tunnel to create by name is asked for in two steps, so that the
// record survives a controller that stops (or stops leading) right after
// creating it: first the condition says, with status Unknown and reason
// Creating, which name is to be created (the intent, TunnelIntentOf), and
// only once the Gateway's status holds it does the Cloudflare sync create
// the tunnel. Whoever leads next, finding a tunnel of that name made
// after the intent was recorded, knows tunnelgate made it for this
// Gateway.
const (
	GatewayConditionTunnel = "tunnelgate.dev/Tunnel"
	// TunnelReasonCreated: tunnelgate created the tunnel for this Gateway
	// (tunnel.name, none by that name existed); deleting the Gateway
	// keeps it.
	TunnelReasonCreated = "Created"
	// TunnelReasonCreatedDeleteWithGateway: as Created, and
	// tunnel.deleteWithGateway is set, so it goes with the Gateway.
	TunnelReasonCreatedDeleteWithGateway = "CreatedDeleteWithGateway"
	// TunnelReasonExisting: the tunnel existed before (tunnel.id,
	// tunnel.tokenSecretRef, or a name taken over); tunnelgate never
	// deletes it.
	TunnelReasonExisting = "Existing"
	// TunnelReasonCreating: (status Unknown) the tunnel named in the
	// message is to be created for this Gateway, unless one by that name
	// exists.
	TunnelReasonCreating = "Creating"
)

// TunnelRecord is what a Gateway's status records of its own tunnel.
type TunnelRecord struct {
	ID string
	// Created: tunnelgate created the tunnel for this Gateway.
	Created bool
	// DeleteWithGateway: it is to be deleted with the Gateway.
	DeleteWithGateway bool
}

// TunnelRecordOf reads the record from a Gateway's status; ok is false
// when there is none, or it is not one tunnelgate wrote.
func TunnelRecordOf(g *gwv1.Gateway) (TunnelRecord, bool) {
	return parseTunnelRecord(findCond(g.Status.Conditions, GatewayConditionTunnel))
}

// TunnelIntent is the tunnel a Gateway's status says is to be created
// for it (reason Creating): its name, and since when the status has said
// so.
type TunnelIntent struct {
	Name  string
	Since time.Time
}

// tunnelIntentPrefix starts the message of the intent, followed by the
// tunnel's name, quoted.
const tunnelIntentPrefix = "tunnelgate creates tunnel "

// TunnelIntentOf reads the intent from a Gateway's status; ok is false
// when there is none.
func TunnelIntentOf(g *gwv1.Gateway) (TunnelIntent, bool) {
	c := findCond(g.Status.Conditions, GatewayConditionTunnel)
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != TunnelReasonCreating {
		return TunnelIntent{}, false
	}
	rest, ok := strings.CutPrefix(c.Message, tunnelIntentPrefix)
	if !ok {
		return TunnelIntent{}, false
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return TunnelIntent{}, false
	}
	name, err := strconv.Unquote(quoted)
	// Only what the controller writes is read back: a hand-written
	// status with another quoting (backquotes, escapes of plain
	// characters, bytes that are not UTF-8) is not an intent.
	if err != nil || name == "" || quoted != strconv.Quote(name) {
		return TunnelIntent{}, false
	}
	return TunnelIntent{Name: name, Since: c.LastTransitionTime.Time}, true
}

func parseTunnelRecord(c *metav1.Condition) (TunnelRecord, bool) {
	if c == nil || c.Status != metav1.ConditionTrue {
		return TunnelRecord{}, false
	}
	rest, ok := strings.CutPrefix(c.Message, "tunnel ")
	id, _, _ := strings.Cut(rest, " ")
	if !ok || !validTunnelID(id) {
		return TunnelRecord{}, false
	}
	switch c.Reason {
	case TunnelReasonCreated:
		return TunnelRecord{ID: id, Created: true}, true
	case TunnelReasonCreatedDeleteWithGateway:
		return TunnelRecord{ID: id, Created: true, DeleteWithGateway: true}, true
	case TunnelReasonExisting:
		return TunnelRecord{ID: id}, true
	}
	return TunnelRecord{}, false
}

// validTunnelID accepts what a tunnel ID (a UUID) is made of, so a record
// edited by hand cannot carry a path or a query into an API call.
func validTunnelID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

// TunnelFinalizer is the controller's finalizer on a Gateway with a
// tunnel of its own: it holds the Gateway, deleted or gone off its own
// tunnel, until that tunnel is cleaned up in Cloudflare. While it does,
// the Gateway's record is kept, since the cleanup reads it.
const TunnelFinalizer = "tunnelgate.dev/tunnel-cleanup"

// keepTunnelRecord carries a Gateway's record while it holds
// TunnelFinalizer and nothing set it anew.
func keepTunnelRecord(gi *gatewayInfo) {
	if gi.conds.get(GatewayConditionTunnel) == nil && slices.Contains(gi.obj.Finalizers, TunnelFinalizer) {
		gi.conds.keep(GatewayConditionTunnel)
	}
}

// ownTunnelCondition sets GatewayConditionTunnel on a Gateway with a
// tunnel of its own, from that tunnel's report; until the report names
// the tunnel (at a start, before the first sync) the record it had is
// kept.
func (t *translator) ownTunnelCondition(gi *gatewayInfo) {
	tun := gi.params.Spec.Tunnel
	if tun == nil {
		return
	}
	ts := t.in.Tunnels[PlaneTunnelKey(gi.class.obj.Name, gi.key)]
	if ts == nil || ts.ID == "" {
		if ts == nil || !ts.AwaitsIntent || tun.Name == "" {
			gi.conds.keep(GatewayConditionTunnel)
			return
		}
		// The intent's time says since when a tunnel of this name would be
		// tunnelgate's: a new name starts anew.
		set := gi.conds.setStatus
		if was, ok := TunnelIntentOf(gi.obj); ok && was.Name != tun.Name {
			set = gi.conds.setAnew
		}
		set(GatewayConditionTunnel, metav1.ConditionUnknown, TunnelReasonCreating,
			tunnelIntentPrefix+strconv.Quote(tun.Name)+" for this Gateway, unless the account has one by that name")
		return
	}
	switch {
	case !ts.Created:
		gi.conds.set(GatewayConditionTunnel, true, TunnelReasonExisting,
			"tunnel "+ts.ID+" existed before this Gateway named it; tunnelgate never deletes it")
	case tun.DeleteWithGateway:
		gi.conds.set(GatewayConditionTunnel, true, TunnelReasonCreatedDeleteWithGateway,
			"tunnel "+ts.ID+" was created by tunnelgate for this Gateway, and is deleted with it (tunnel.deleteWithGateway)")
	default:
		gi.conds.set(GatewayConditionTunnel, true, TunnelReasonCreated,
			"tunnel "+ts.ID+" was created by tunnelgate for this Gateway; it is kept when the Gateway is deleted (set tunnel.deleteWithGateway to delete it then)")
	}
	rotationCondition(&gi.conds, ts)
}
