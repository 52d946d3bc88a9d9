// This file plans a tunnel's DNS records.

package cloudflare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Record is a DNS record as the planner sees it.
type Record struct {
	ID      string
	Type    string
	Name    string // fully qualified, lower case
	Content string
	Proxied bool
	Comment string
}

func (r Record) String() string { return fmt.Sprintf("%s %s → %s", r.Type, r.Name, r.Content) }

// DNSOptions are the class's DNS settings, resolved.
type DNSOptions struct {
	Owner    string
	TunnelID string
	Proxied  bool
	Takeover bool
	// LivePlanes, when not nil, are the owners under this one
	// ("<Owner>/<namespace>/<gateway>": the tunnels of Gateways with a
	// plane of their own) whose Gateway still exists. The records of any
	// other owner under this one are a deleted Gateway's, and go as this
	// owner's unwanted records do.
	LivePlanes []string
	// LoadBalanced are the wanted hostnames whose DNS belongs to a load
	// balancer (translate.LoadBalancing): they get no CNAME, our records
	// there go as an unwanted hostname's do, and a record not ours is
	// left alone and reported.
	LoadBalanced []string
	// Unmanaged are the wanted hostnames whose DNS a DNSPolicy leaves to
	// others (translate.Hostname.UnmanagedDNS): they get no record, our
	// records there go as an unwanted hostname's do, and any other record
	// is left alone, takeover or not. A hostname also load balanced is
	// the load balancer's (LoadBalanced).
	Unmanaged []string
}

// PlaneOwner is the DNS owner of the tunnel of a Gateway with a plane of
// its own, in a class whose owner is classOwner.
func PlaneOwner(classOwner, namespace, gateway string) string {
	return classOwner + "/" + namespace + "/" + gateway
}

// orphaned reports whether owner is a plane's under o.Owner whose Gateway
// is gone.
func (o DNSOptions) orphaned(owner string) bool {
	return o.LivePlanes != nil && strings.HasPrefix(owner, o.Owner+"/") && !slices.Contains(o.LivePlanes, owner)
}

// DNSPlan is what to change in one zone, in the order a batch applies it
// (deletes, then updates, then creates), and the resulting state of each
// wanted hostname.
type DNSPlan struct {
	Deletes []Record
	Updates []Record // with ID: the whole record is replaced
	Creates []Record
	States  map[string]translate.DNSState
}

// Empty says the plan changes nothing.
func (p *DNSPlan) Empty() bool { return len(p.Deletes)+len(p.Updates)+len(p.Creates) == 0 }

// PlanDNS decides the records of one zone: for each wanted hostname a
// proxied CNAME to the tunnel and an ownership TXT record; for each
// hostname we own but no longer want, or a deleted Gateway's plane owned
// (DNSOptions.LivePlanes), their removal. records is every
// record of the zone. It never touches a record of a hostname owned by
// another owner, nor, without takeover, one of a hostname nobody owns. A
// load balanced hostname (DNSOptions.LoadBalanced) is wanted by its load
// balancer, not by us: our records there go, and one that is not ours
// stays, takeover or not, and is reported. An unmanaged hostname
// (DNSOptions.Unmanaged) is left to others: our records there go, and
// nothing else is looked at.
func PlanDNS(want []string, records []Record, o DNSOptions) DNSPlan {
	byName := map[string][]Record{}
	for _, r := range records {
		byName[r.Name] = append(byName[r.Name], r)
	}
	plan := DNSPlan{States: make(map[string]translate.DNSState, len(want))}
	target := o.TunnelID + translate.TunnelHostnameSuffix
	comment := "managed by tunnelgate (owner " + o.Owner + ")"
	txt := ownershipContent(o.Owner, o.TunnelID)
	wanted := make(map[string]bool, len(want))

	for _, h := range want {
		ours, others := ownershipRecords(byName[ownershipName(h)], o.Owner)
		if ours == nil && len(others) > 0 {
			if own, _ := parseOwnership(others[0].Content); o.orphaned(own.owner) {
				// A deleted plane's: its hostname is ours now.
				ours, others = &others[0], others[1:]
			}
		}
		if slices.Contains(o.LoadBalanced, h) {
			plan.States[h] = loadBalancedState(h, ours != nil, others, byName[h])
			continue // not wanted: our records go below
		}
		if slices.Contains(o.Unmanaged, h) {
			plan.States[h] = translate.DNSState{Ready: true, Unmanaged: true}
			continue // likewise
		}
		wanted[h] = true
		if ours == nil && len(others) > 0 {
			own, _ := parseOwnership(others[0].Content)
			plan.States[h] = translate.DNSState{Reason: translate.DNSReasonOwnedByOther, Message: fmt.Sprintf(
				"owned by tunnelgate owner %q (TXT %s); set a distinct hostname, or remove that owner's records", own.owner, others[0].Name)}
			continue
		}
		var cname *Record
		var foreign []Record
		for _, r := range byName[h] {
			if r.Type == "CNAME" && cname == nil && (ours != nil || o.Takeover) {
				cname = &r
			} else {
				foreign = append(foreign, r)
			}
		}
		if len(foreign) > 0 && !o.Takeover {
			plan.States[h] = translate.DNSState{Reason: translate.DNSReasonForeignRecord, Message: fmt.Sprintf(
				"%s exists and is not ours; delete it, or set dns.takeover to replace it", foreign[0])}
			continue
		}
		plan.Deletes = append(plan.Deletes, foreign...)
		want := Record{Type: "CNAME", Name: h, Content: target, Proxied: o.Proxied, Comment: comment}
		switch {
		case cname == nil:
			plan.Creates = append(plan.Creates, want)
		case cname.Content != target || cname.Proxied != o.Proxied || cname.Comment != comment:
			want.ID = cname.ID
			plan.Updates = append(plan.Updates, want)
		}
		wantTXT := Record{Type: "TXT", Name: ownershipName(h), Content: txt, Comment: comment}
		switch {
		case ours == nil:
			plan.Creates = append(plan.Creates, wantTXT)
		case ours.Content != txt || ours.Comment != comment:
			wantTXT.ID = ours.ID
			plan.Updates = append(plan.Updates, wantTXT)
		}
		plan.States[h] = translate.DNSState{Ready: true}
	}

	// Hostnames we own and no longer want: their CNAME to a tunnel and
	// our ownership record go; anything else there was not ours.
	for _, r := range records {
		h, ok := hostnameOfOwnership(r.Name)
		if !ok || wanted[h] || r.Type != "TXT" {
			continue
		}
		if own, ok := parseOwnership(r.Content); !ok || (own.owner != o.Owner && !o.orphaned(own.owner)) {
			continue
		}
		plan.Deletes = append(plan.Deletes, r)
		for _, c := range byName[h] {
			if c.Type == "CNAME" && strings.HasSuffix(c.Content, translate.TunnelHostnameSuffix) {
				plan.Deletes = append(plan.Deletes, c)
			}
		}
	}
	sortRecords(plan.Deletes)
	plan.Deletes = slices.CompactFunc(plan.Deletes, func(a, b Record) bool { return a.ID == b.ID })
	sortRecords(plan.Updates)
	sortRecords(plan.Creates)
	return plan
}

// loadBalancedState is the state of a load balanced hostname's DNS: ready
// unless a record we do not own is there (another owner's, or anyone's),
// which the load balancer takes precedence over and we leave alone. ours
// says whether our ownership record is there: then our CNAME to a tunnel
// goes with it.
func loadBalancedState(h string, ours bool, others, at []Record) translate.DNSState {
	if len(others) > 0 {
		own, _ := parseOwnership(others[0].Content)
		return translate.DNSState{LoadBalanced: true, Reason: translate.DNSReasonOwnedByOther, Message: fmt.Sprintf(
			"%s is load balanced, and its load balancer takes precedence over the records of tunnelgate owner %q (TXT %s), which are left as they are; that owner removes them once it load balances the hostname too, or remove them",
			h, own.owner, others[0].Name)}
	}
	for _, r := range at {
		if ours && r.Type == "CNAME" && strings.HasSuffix(r.Content, translate.TunnelHostnameSuffix) {
			continue // ours: deleted
		}
		return translate.DNSState{LoadBalanced: true, Reason: translate.DNSReasonForeignRecord, Message: fmt.Sprintf(
			"%s is load balanced, and its load balancer takes precedence over %s, which is not tunnelgate's and is left as it is; delete it to keep the zone clear",
			h, r)}
	}
	return translate.DNSState{Ready: true, LoadBalanced: true}
}

// ownershipRecords splits the TXT records at a hostname's ownership name
// into ours and other owners'.
func ownershipRecords(at []Record, owner string) (ours *Record, others []Record) {
	for _, r := range at {
		if r.Type != "TXT" {
			continue
		}
		own, ok := parseOwnership(r.Content)
		switch {
		case !ok:
		case own.owner == owner && ours == nil:
			ours = &r
		case own.owner != owner:
			others = append(others, r)
		}
	}
	return ours, others
}

func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
