package cffake

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Record is a snapshot of a DNS record.
type Record struct {
	ID      string
	Type    string
	Name    string // fully qualified, lowercased
	Content string
	Proxied bool
	TTL     int // 1 = automatic
	Comment string
}

// Records returns the zone's DNS records in creation order (nil for an
// unknown zone).
func (f *Fake) Records(zoneID string) []Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	z := f.zone(zoneID)
	if z == nil {
		return nil
	}
	out := make([]Record, len(z.records))
	for i, r := range z.records {
		out[i] = Record{ID: r.id, Type: r.typ, Name: r.name, Content: r.content,
			Proxied: r.proxied, TTL: r.ttl, Comment: r.comment}
	}
	return out
}

// AddRecord seeds a record, for instance one the controller does not own,
// and returns its ID (rec.ID if set). The name is normalised like the API
// does, TTL 0 means 1, and no rule is checked, so a test can seed a state
// the API would refuse to create.
func (f *Fake) AddRecord(zoneID string, rec Record) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	z := f.zone(zoneID)
	if z == nil {
		panic("cffake: unknown zone " + zoneID)
	}
	name, err := z.fqdn(rec.Name)
	if err != nil {
		panic(fmt.Sprintf("cffake: record name %q: %v", rec.Name, err))
	}
	r := record{id: rec.ID, typ: strings.ToUpper(rec.Type), name: name, content: rec.Content,
		proxied: rec.Proxied, ttl: rec.TTL, comment: rec.Comment, created: now()}
	if r.id == "" {
		r.id = newID()
	}
	if r.ttl == 0 {
		r.ttl = 1
	}
	r.modified, r.commentAt = r.created, r.created
	z.records = append(z.records, r)
	return r.id
}

func (f *Fake) routeDNS() {
	const base = "/zones/{zone_id}/dns_records"
	f.handle("GET "+base, f.zoneEndpoint(f.listRecords))
	f.handle("POST "+base, f.zoneEndpoint(f.createRecord))
	f.handle("POST "+base+"/batch", f.zoneEndpoint(f.batchRecords))
	f.handle("GET "+base+"/{record_id}", f.zoneEndpoint(f.getRecord))
	f.handle("PUT "+base+"/{record_id}", f.zoneEndpoint(f.updateRecord(false)))
	f.handle("PATCH "+base+"/{record_id}", f.zoneEndpoint(f.updateRecord(true)))
	f.handle("DELETE "+base+"/{record_id}", f.zoneEndpoint(f.deleteRecord))
}

func (f *Fake) zoneEndpoint(ep func(*zone, *http.Request, []byte) (reply, error)) endpoint {
	return func(r *http.Request, body []byte) (reply, error) {
		z := f.zone(r.PathValue("zone_id"))
		if z == nil {
			return reply{}, notRoutable(r.URL.Path)
		}
		return ep(z, r, body)
	}
}

func recordNotFound() *apiError {
	return newErr(http.StatusNotFound, codeRecordNotFound, "Record does not exist.")
}

func findRecord(rs []record, id string) int {
	return slices.IndexFunc(rs, func(r record) bool { return r.id == id })
}

// The three changes below work on a slice the caller commits only if every
// change succeeds; that is what makes a batch all-or-nothing.

func (z *zone) create(rs *[]record, in recordInput) (record, error) {
	rec, err := z.build(record{id: newID(), created: now()}, in, false)
	if err != nil {
		return record{}, err
	}
	if err := checkConflicts(*rs, rec); err != nil {
		return record{}, err
	}
	*rs = append(*rs, rec)
	return rec, nil
}

func (z *zone) update(rs *[]record, id string, in recordInput, partial bool) (record, error) {
	i := findRecord(*rs, id)
	if i < 0 {
		return record{}, recordNotFound()
	}
	rec, err := z.build((*rs)[i], in, partial)
	if err != nil {
		return record{}, err
	}
	if err := checkConflicts(*rs, rec); err != nil {
		return record{}, err
	}
	(*rs)[i] = rec
	return rec, nil
}

func remove(rs *[]record, id string) (record, error) {
	i := findRecord(*rs, id)
	if i < 0 {
		return record{}, recordNotFound()
	}
	rec := (*rs)[i]
	*rs = slices.Delete(*rs, i, i+1)
	return rec, nil
}

func (f *Fake) createRecord(z *zone, _ *http.Request, body []byte) (reply, error) {
	var in recordInput
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	work := slices.Clone(z.records)
	rec, err := z.create(&work, in)
	if err != nil {
		return reply{}, err
	}
	z.records = work
	return reply{result: rec.json()}, nil
}

func (f *Fake) updateRecord(partial bool) func(*zone, *http.Request, []byte) (reply, error) {
	return func(z *zone, r *http.Request, body []byte) (reply, error) {
		var in recordInput
		if err := decodeBody(body, &in); err != nil {
			return reply{}, err
		}
		work := slices.Clone(z.records)
		rec, err := z.update(&work, r.PathValue("record_id"), in, partial)
		if err != nil {
			return reply{}, err
		}
		z.records = work
		return reply{result: rec.json()}, nil
	}
}

func (f *Fake) getRecord(z *zone, r *http.Request, _ []byte) (reply, error) {
	i := findRecord(z.records, r.PathValue("record_id"))
	if i < 0 {
		return reply{}, recordNotFound()
	}
	return reply{result: z.records[i].json()}, nil
}

func (f *Fake) deleteRecord(z *zone, r *http.Request, _ []byte) (reply, error) {
	rec, err := remove(&z.records, r.PathValue("record_id"))
	if err != nil {
		return reply{}, err
	}
	return reply{result: map[string]string{"id": rec.id}}, nil
}

// batchRecords applies deletes, patches, puts and posts in that order to
// a copy of the zone and keeps the copy only if all of them succeed.
func (f *Fake) batchRecords(z *zone, _ *http.Request, body []byte) (reply, error) {
	var in struct {
		Deletes []recordInput `json:"deletes"`
		Patches []recordInput `json:"patches"`
		Puts    []recordInput `json:"puts"`
		Posts   []recordInput `json:"posts"`
	}
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	work := slices.Clone(z.records)
	var out struct {
		Deletes []recordJSON `json:"deletes,omitempty"`
		Patches []recordJSON `json:"patches,omitempty"`
		Puts    []recordJSON `json:"puts,omitempty"`
		Posts   []recordJSON `json:"posts,omitempty"`
	}
	groups := []struct {
		name string
		ops  []recordInput
		res  *[]recordJSON
		do   func(recordInput) (record, error)
	}{
		{"deletes", in.Deletes, &out.Deletes, func(op recordInput) (record, error) { return remove(&work, deref(op.ID)) }},
		{"patches", in.Patches, &out.Patches, func(op recordInput) (record, error) { return z.update(&work, deref(op.ID), op, true) }},
		{"puts", in.Puts, &out.Puts, func(op recordInput) (record, error) { return z.update(&work, deref(op.ID), op, false) }},
		{"posts", in.Posts, &out.Posts, func(op recordInput) (record, error) { return z.create(&work, op) }},
	}
	for _, g := range groups {
		for i, op := range g.ops {
			if g.name != "posts" && deref(op.ID) == "" {
				return reply{}, batchErr(dnsErr(codeDNSValidation, "DNS Validation Error: id is required."), g.name, i)
			}
			rec, err := g.do(op)
			if err != nil {
				return reply{}, batchErr(err, g.name, i)
			}
			*g.res = append(*g.res, rec.json())
		}
	}
	z.records = work
	return reply{result: out}, nil
}

// batchErr points a failed batch entry's error at the entry.
func batchErr(err error, group string, i int) error {
	if e, ok := err.(*apiError); ok {
		c := *e
		c.info.Source = &errorSource{Pointer: fmt.Sprintf("/%s/%d", group, i)}
		return &c
	}
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (f *Fake) listRecords(z *zone, r *http.Request, _ []byte) (reply, error) {
	q := r.URL.Query()
	matchAny, err := matchAnyParam(q)
	if err != nil {
		return reply{}, err
	}
	var fs filters[record]
	text := func(field string, get func(record) string) {
		for _, op := range []string{"", "exact", "contains", "startswith", "endswith"} {
			key := field
			if op != "" {
				key += "." + op
			}
			if v, ok := q[key]; ok && v[0] != "" {
				test := textOp(op, v[0])
				fs.add(func(rec record) bool { return test(get(rec)) })
			}
		}
	}
	text("name", func(rec record) string { return rec.name })
	text("content", func(rec record) string { return rec.content })
	text("comment", func(rec record) string { return rec.comment })
	if _, ok := q["comment.present"]; ok {
		fs.add(func(rec record) bool { return rec.comment != "" })
	}
	if _, ok := q["comment.absent"]; ok {
		fs.add(func(rec record) bool { return rec.comment == "" })
	}
	if v := q.Get("type"); v != "" {
		fs.add(func(rec record) bool { return strings.EqualFold(rec.typ, v) })
	}
	proxied, set, err := boolParam(q, "proxied")
	if err != nil {
		return reply{}, err
	}
	if set {
		fs.add(func(rec record) bool { return rec.proxied == proxied })
	}
	list := slices.Clone(fs.apply(z.records, matchAny))
	if err := sortRecords(list, q.Get("order"), q.Get("direction")); err != nil {
		return reply{}, err
	}
	page, info, err := paginate(q, list, recordPages)
	if err != nil {
		return reply{}, err
	}
	out := make([]recordJSON, len(page))
	for i, rec := range page {
		out[i] = rec.json()
	}
	return reply{result: out, info: info}, nil
}

// sortRecords orders a listing; the default is by type, as Cloudflare's is.
// Ties keep creation order so pages are stable.
func sortRecords(list []record, order, direction string) error {
	var key func(a, b record) int
	switch order {
	case "", "type":
		key = func(a, b record) int { return cmp.Compare(a.typ, b.typ) }
	case "name":
		key = func(a, b record) int { return cmp.Compare(a.name, b.name) }
	case "content":
		key = func(a, b record) int { return cmp.Compare(a.content, b.content) }
	case "ttl":
		key = func(a, b record) int { return cmp.Compare(a.ttl, b.ttl) }
	case "proxied":
		key = func(a, b record) int { return cmp.Compare(btoi(a.proxied), btoi(b.proxied)) }
	default:
		return newErr(http.StatusBadRequest, codeInvalidRequest, "Invalid request: unknown order "+order)
	}
	switch direction {
	case "", "asc":
	case "desc":
		asc := key
		key = func(a, b record) int { return asc(b, a) }
	default:
		return newErr(http.StatusBadRequest, codeInvalidRequest, "Invalid request: direction must be asc or desc")
	}
	slices.SortStableFunc(list, key)
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tunnelSuffix is the CNAME target of a hostname served by a tunnel.
const tunnelSuffix = ".cfargotunnel.com"

// ResolveTunnel is what Cloudflare's edge does with a visitor's hostname:
// the records at that name, or when there are none the wildcard one label
// up (RFC 4592), decide; a proxied CNAME there pointing at
// <tunnel ID>.cfargotunnel.com names the tunnel that serves it. ok is
// false when it names none.
func (f *Fake) ResolveTunnel(hostname string) (tunnelID string, ok bool) {
	host := strings.ToLower(strings.TrimSuffix(hostname, "."))
	names := []string{host}
	if _, parent, found := strings.Cut(host, "."); found {
		names = append(names, "*."+parent)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		exists := false
		for _, z := range f.zones {
			for _, r := range z.records {
				if r.name != name {
					continue
				}
				exists = true
				if r.typ == "CNAME" && r.proxied && strings.HasSuffix(r.content, tunnelSuffix) {
					return strings.TrimSuffix(r.content, tunnelSuffix), true
				}
			}
		}
		if exists {
			return "", false // the name's own records answer, and name no tunnel
		}
	}
	return "", false
}
