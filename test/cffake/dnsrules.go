package cffake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// record is a stored DNS record.
type record struct {
	id, typ, name, content, comment string
	proxied                         bool
	ttl                             int
	priority                        *float64
	data, tags, settings            json.RawMessage
	created, modified, commentAt    time.Time
}

// recordInput is a create/update/edit body (or one batch entry). Pointers
// tell a PATCH which fields were sent.
type recordInput struct {
	ID       *string         `json:"id"`
	Type     *string         `json:"type"`
	Name     *string         `json:"name"`
	Content  *string         `json:"content"`
	TTL      *float64        `json:"ttl"`
	Proxied  *bool           `json:"proxied"`
	Comment  *string         `json:"comment"`
	Priority *float64        `json:"priority"`
	Data     json.RawMessage `json:"data"`
	Tags     json.RawMessage `json:"tags"`
	Settings json.RawMessage `json:"settings"`
}

var recordTypes = []string{"A", "AAAA", "CAA", "CERT", "CNAME", "DNSKEY", "DS", "HTTPS", "LOC", "MX",
	"NAPTR", "NS", "OPENPGPKEY", "PTR", "SMIMEA", "SRV", "SSHFP", "SVCB", "TLSA", "TXT", "URI"}

func proxiable(typ string) bool { return typ == "A" || typ == "AAAA" || typ == "CNAME" }

func dnsErr(code int, msg string) *apiError { return newErr(http.StatusBadRequest, code, msg) }

// fqdn turns a record name into the form Cloudflare stores: lowercased,
// without a trailing dot, inside the zone ("@" is the apex; a name not
// ending in the zone gets it appended).
func (z *zone) fqdn(name string) (string, error) {
	n := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
	switch {
	case n == "":
		return "", dnsErr(codeDNSName, "DNS name is invalid.")
	case n == "@":
		n = z.name
	case n != z.name && !strings.HasSuffix(n, "."+z.name):
		n += "." + z.name
	}
	if len(n) > 253 {
		return "", dnsErr(codeDNSName, "DNS name is invalid: longer than 253 characters.")
	}
	for i, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 || label == "*" && i != 0 {
			return "", dnsErr(codeDNSName, "DNS name is invalid.")
		}
		if label == "*" {
			continue
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", dnsErr(codeDNSName, "DNS name is invalid.")
			}
		}
	}
	return n, nil
}

// build applies in to base: a PATCH (partial) keeps what in leaves out, a
// POST or PUT starts from nothing. The result is validated on its own;
// conflicts with other records are checked by the caller.
func (z *zone) build(base record, in recordInput, partial bool) (record, error) {
	rec := base
	if !partial {
		rec = record{id: base.id, created: base.created, commentAt: base.commentAt, comment: base.comment}
		if in.Type == nil || in.Name == nil {
			return record{}, dnsErr(codeDNSValidation, "DNS Validation Error: type and name are required.")
		}
		if in.TTL == nil {
			return record{}, dnsErr(codeTTL, "Invalid TTL. Must be between 60 and 86400 seconds, or 1 for automatic.")
		}
		if in.Comment == nil {
			rec.comment = ""
		}
	}
	if in.Type != nil {
		rec.typ = strings.ToUpper(*in.Type)
	}
	if in.Name != nil {
		n, err := z.fqdn(*in.Name)
		if err != nil {
			return record{}, err
		}
		rec.name = n
	}
	if in.Content != nil {
		rec.content = *in.Content
	}
	if in.TTL != nil {
		t := *in.TTL
		if t != math.Trunc(t) || t != 1 && (t < 60 || t > 86400) {
			return record{}, dnsErr(codeTTL, "Invalid TTL. Must be between 60 and 86400 seconds, or 1 for automatic.")
		}
		rec.ttl = int(t)
	}
	if in.Proxied != nil {
		rec.proxied = *in.Proxied
	}
	if in.Comment != nil && *in.Comment != rec.comment {
		rec.comment = *in.Comment
		rec.commentAt = now()
	}
	if in.Priority != nil {
		p := *in.Priority
		rec.priority = &p
	}
	if in.Data != nil {
		rec.data = in.Data
	}
	if in.Tags != nil {
		rec.tags = in.Tags
	}
	if in.Settings != nil {
		rec.settings = in.Settings
	}
	if err := checkRecord(&rec); err != nil {
		return record{}, err
	}
	rec.modified = now()
	return rec, nil
}

// checkRecord validates a record by itself and normalises its content.
func checkRecord(rec *record) error {
	if !slices.Contains(recordTypes, rec.typ) {
		return dnsErr(codeRecordType, fmt.Sprintf("Invalid DNS record type %q.", rec.typ))
	}
	if rec.proxied && !proxiable(rec.typ) {
		return dnsErr(codeNotProxiable, "This record type cannot be proxied.")
	}
	if rec.proxied {
		rec.ttl = 1 // proxied records are always "automatic"
	}
	switch rec.typ {
	case "A":
		if a, err := netip.ParseAddr(rec.content); err != nil || !a.Is4() {
			return dnsErr(codeIPv4, "Content for A record must be a valid IPv4 address.")
		}
	case "AAAA":
		if a, err := netip.ParseAddr(rec.content); err != nil || !a.Is6() || a.Is4In6() {
			return dnsErr(codeIPv6, "Content for AAAA record must be a valid IPv6 address.")
		}
	case "CNAME":
		c := strings.TrimSuffix(rec.content, ".")
		if c == "" || strings.ContainsAny(c, " /:@") || strings.EqualFold(c, rec.name) {
			return dnsErr(codeCNAMEContent, "Content for CNAME record is invalid.")
		}
		rec.content = c
	case "TXT":
		// Stored as given: quoting and splitting are the caller's business.
	default:
		if rec.content == "" && rec.data == nil {
			return dnsErr(codeDNSValidation, fmt.Sprintf("DNS Validation Error: content for %s record is required.", rec.typ))
		}
	}
	return nil
}

// checkConflicts applies the rules that involve other records: a CNAME
// owns its name alone, and no two records may be identical. others may
// contain rec itself (by ID), which is skipped.
func checkConflicts(others []record, rec record) error {
	var same []record
	for _, o := range others {
		if o.id != rec.id && o.name == rec.name {
			same = append(same, o)
		}
	}
	for _, o := range same {
		if identical(o, rec) {
			return dnsErr(codeIdentical, "An identical record already exists.")
		}
	}
	for _, o := range same {
		switch {
		case rec.typ == "CNAME":
			return dnsErr(codeCNAMEConflict, "An A, AAAA, or CNAME record with that host already exists.")
		case o.typ == "CNAME":
			return dnsErr(codeCNAMEExists, "A CNAME record with that host already exists.")
		}
	}
	return nil
}

func identical(a, b record) bool {
	if a.typ != b.typ || a.name != b.name || !bytes.Equal(a.data, b.data) {
		return false
	}
	if (a.priority == nil) != (b.priority == nil) || a.priority != nil && *a.priority != *b.priority {
		return false
	}
	if a.typ == "TXT" {
		return a.content == b.content
	}
	return strings.EqualFold(a.content, b.content)
}

type recordJSON struct {
	ID                string          `json:"id"`
	Name              string          `json:"name"`
	Type              string          `json:"type"`
	Content           string          `json:"content"`
	Proxiable         bool            `json:"proxiable"`
	Proxied           bool            `json:"proxied"`
	TTL               int             `json:"ttl"`
	Priority          *float64        `json:"priority,omitempty"`
	Data              json.RawMessage `json:"data,omitempty"`
	Settings          json.RawMessage `json:"settings"`
	Meta              struct{}        `json:"meta"`
	Comment           *string         `json:"comment"`
	Tags              json.RawMessage `json:"tags"`
	CreatedOn         time.Time       `json:"created_on"`
	ModifiedOn        time.Time       `json:"modified_on"`
	CommentModifiedOn *time.Time      `json:"comment_modified_on,omitempty"`
}

func (r record) json() recordJSON {
	j := recordJSON{ID: r.id, Name: r.name, Type: r.typ, Content: r.content, Proxiable: proxiable(r.typ),
		Proxied: r.proxied, TTL: r.ttl, Priority: r.priority, Data: r.data,
		Settings: r.settings, Tags: r.tags, CreatedOn: r.created, ModifiedOn: r.modified}
	if j.Settings == nil {
		j.Settings = json.RawMessage("{}")
	}
	if j.Tags == nil {
		j.Tags = json.RawMessage("[]")
	}
	if r.comment != "" {
		c, at := r.comment, r.commentAt
		j.Comment, j.CommentModifiedOn = &c, &at
	}
	return j
}
