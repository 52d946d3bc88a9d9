// This file removes a departing Gateway's DNS records and tunnel.

package cloudflare

import (
	"context"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A departure is the cleanup after a Gateway that had a tunnel of its own
// and has it no more: the Gateway is being deleted (the controller's
// finalizer holds it until this is done), or its GatewayConfig names no
// tunnel now. In order:
//
//  1. Its DNS records go: every record of its DNS owner (PlaneOwner), in
//     every zone the class's settings allow, so no hostname is left
//     pointing at a tunnel nobody serves.
//  2. Its tunnel, when known and held by no other wish, is deleted if
//     DeleteTunnel says so and tunnelgate created it for this Gateway
//     (createdFor); its connectors are removed first, since Cloudflare
//     refuses to delete a tunnel that has any. Otherwise the tunnel is
//     kept, its ingress document emptied, so that a connector still
//     running its token serves nothing. Before that, the Access
//     applications and policies of its tunnel's sync (accessapps.go) are
//     deleted, and its tunnel leaves every Load Balancing pool it is an
//     origin of (lbsync.go), as leaving a LoadBalancing does.
//
// Nothing is created and no token written. Each step is repeated whole
// after a failure, as every sync is; the report says Departed once all
// is done, and the controller then lets the Gateway go.

// syncDeparture carries out a departure.
func (s *Syncer) syncDeparture(ctx context.Context, c *classSync, d Desired) (*translate.TunnelState, error) {
	s.useToken(c, d)
	st := &translate.TunnelState{Pending: "removing the Gateway's DNS records and tunnel"}
	if err := s.resolveAccount(ctx, c, d); err != nil {
		if p, ok := err.(problem); ok {
			return &translate.TunnelState{Problem: string(p)}, nil
		}
		return failure(st, err)
	}
	if d.Spec.DNS != nil && d.Spec.DNS.Enabled {
		none := d
		none.Hostnames = nil
		if _, err := s.syncDNS(ctx, c, none, nil); err != nil {
			return failure(st, err)
		}
	}
	id, err := s.departingTunnel(ctx, c, d)
	if err != nil {
		return failure(st, err)
	}
	if id != "" {
		if err := s.leaveTunnel(ctx, c, d, id); err != nil {
			return failure(st, err)
		}
	}
	// Done: the tunnel is no longer this wish's, so it holds up no other.
	c.l.tunnelID, c.l.tunnelFor, c.l.applied = "", "", ""
	return &translate.TunnelState{ID: id, Departed: true}, nil
}

// departingTunnel finds the tunnel the departing wish names, without
// creating it: "" when it names none, or none exists.
func (s *Syncer) departingTunnel(ctx context.Context, c *classSync, d Desired) (string, error) {
	t := d.Spec.Tunnel
	if t == nil || t.ID == "" && t.Name == "" {
		return "", nil
	}
	want := c.l.account + "/" + t.ID + "/" + t.Name
	if c.l.tunnelID != "" && c.l.tunnelFor == want {
		return c.l.tunnelID, nil
	}
	id := t.ID
	if id != "" {
		_, ok, err := c.l.api.getTunnel(ctx, c.l.account, id)
		if err != nil || !ok {
			return "", err
		}
	} else {
		var err error
		if id, _, err = c.l.api.tunnelByName(ctx, c.l.account, t.Name); err != nil || id == "" {
			return "", err
		}
	}
	c.l.tunnelID, c.l.tunnelFor = id, want
	return id, nil
}

// clockSkew is how much earlier than its Gateway a tunnel created for it
// may seem to be: the cluster's clock and Cloudflare's differ.
const clockSkew = time.Minute

// leaveTunnel deletes the departing wish's tunnel, or empties its ingress
// document, unless another wish holds it.
func (s *Syncer) leaveTunnel(ctx context.Context, c *classSync, d Desired, id string) error {
	if holder := s.tunnelHolder(c, d); holder != "" {
		s.opts.Log.Info("departing Gateway's tunnel left as it is: another wish holds it", "class", d.Class, "tunnel", id, "holder", holder)
		return nil
	}
	// Its Access applications go before the tunnel that marks them.
	if _, err := s.applyAccess(ctx, c, nil); err != nil {
		return err
	}
	// So do its origins, before the tunnel they point at.
	if err := s.leaveLoadBalancers(ctx, c, d); err != nil {
		return err
	}
	if d.DeleteTunnel && s.createdFor(c, d, id) {
		info, ok, err := c.l.api.getTunnel(ctx, c.l.account, id)
		switch {
		case err != nil:
			return err
		case !ok:
			return nil // deleted already
		case info.createdAt.Before(d.Since.Add(-clockSkew)):
			// Older than the Gateway: not made for it, whatever its
			// status says (a status can be written by hand).
			s.opts.Log.Warn("tunnel not deleted: it is older than the Gateway that records creating it",
				"class", d.Class, "tunnel", id, "tunnelCreated", info.createdAt, "gatewayCreated", d.Since)
		default:
			if err := c.l.api.cleanupConnections(ctx, c.l.account, id); err != nil {
				return err
			}
			if err := c.l.api.deleteTunnel(ctx, c.l.account, id); err != nil {
				return err
			}
			s.opts.Log.Info("tunnel deleted with its Gateway", "class", d.Class, "tunnel", id)
			return nil
		}
	}
	doc := BuildDocument(nil, d.Spec.Origin)
	remote, err := c.l.api.getConfig(ctx, c.l.account, id)
	if err != nil {
		return err
	}
	if !SameDocument(remote, doc) {
		if err := c.l.api.putConfig(ctx, c.l.account, id, doc); err != nil {
			return err
		}
		s.opts.Log.Info("departing Gateway's tunnel kept, its ingress document emptied", "class", d.Class, "tunnel", id)
	}
	return nil
}

// createdFor says whether tunnel id was created by tunnelgate for d's
// Gateway: by this Syncer, for the Gateway of that creation time, or as
// the Gateway's status records (Desired.CreatedTunnel).
func (s *Syncer) createdFor(c *classSync, d Desired, id string) bool {
	if id == "" || !isPlane(d.Class) {
		return false
	}
	return c.l.created == id && c.l.createdSince.Equal(d.Since) || d.CreatedTunnel == id
}
