package cffake

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"
)

type zone struct {
	id, name string
	acct     *account
	created  time.Time
	records  []record // in creation order
}

// AddZone adds an active zone to an account added before.
func (f *Fake) AddZone(id, name, accountID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.zones = append(f.zones, &zone{
		id: id, name: strings.ToLower(strings.TrimSuffix(name, ".")),
		acct: f.mustAccount(accountID), created: now(),
	})
}

func (f *Fake) zone(id string) *zone {
	for _, z := range f.zones {
		if z.id == id {
			return z
		}
	}
	return nil
}

func (f *Fake) routeZones() {
	f.handle("GET /zones", f.listZones)
	f.handle("GET /zones/{zone_id}", f.getZone)
}

func (f *Fake) listZones(r *http.Request, _ []byte) (reply, error) {
	q := r.URL.Query()
	matchAny, err := matchAnyParam(q)
	if err != nil {
		return reply{}, err
	}
	var fs filters[*zone]
	if v := q.Get("name"); v != "" {
		test := zoneNameOp(v)
		fs.add(func(z *zone) bool { return test(z.name) })
	}
	if v := q.Get("status"); v != "" {
		fs.add(func(*zone) bool { return v == "active" })
	}
	if v := q.Get("account.id"); v != "" {
		fs.add(func(z *zone) bool { return z.acct.id == v })
	}
	if v := q.Get("account.name"); v != "" {
		test := zoneNameOp(v)
		fs.add(func(z *zone) bool { return test(z.acct.name) })
	}
	list := slices.Clone(fs.apply(f.zones, matchAny))
	key := func(z *zone) string { return z.name }
	switch q.Get("order") {
	case "account.id":
		key = func(z *zone) string { return z.acct.id }
	case "account.name":
		key = func(z *zone) string { return z.acct.name }
	}
	slices.SortStableFunc(list, func(a, b *zone) int { return cmp.Compare(key(a), key(b)) })
	if q.Get("direction") == "desc" {
		slices.Reverse(list)
	}
	page, info, err := paginate(q, list, zonePages)
	if err != nil {
		return reply{}, err
	}
	out := make([]zoneJSON, len(page))
	for i, z := range page {
		out[i] = z.json()
	}
	return reply{result: out, info: info}, nil
}

// zoneNameOp reads the zones endpoint's "operator:value" filter syntax
// (equal by default, case-insensitive unless the operator says otherwise).
func zoneNameOp(v string) func(string) bool {
	op, val, found := strings.Cut(v, ":")
	if !found {
		op, val = "equal", v
	}
	fold := !strings.HasSuffix(op, "_case_sensitive")
	norm := func(s string) string {
		if fold {
			return strings.ToLower(s)
		}
		return s
	}
	val = norm(val)
	switch strings.TrimSuffix(op, "_case_sensitive") {
	case "equal":
		return func(s string) bool { return norm(s) == val }
	case "not_equal":
		return func(s string) bool { return norm(s) != val }
	case "starts_with":
		return func(s string) bool { return strings.HasPrefix(norm(s), val) }
	case "ends_with":
		return func(s string) bool { return strings.HasSuffix(norm(s), val) }
	case "contains":
		return func(s string) bool { return strings.Contains(norm(s), val) }
	}
	// Not an operator: the colon is part of the name.
	return func(s string) bool { return strings.EqualFold(s, v) }
}

func (f *Fake) getZone(r *http.Request, _ []byte) (reply, error) {
	z := f.zone(r.PathValue("zone_id"))
	if z == nil {
		return reply{}, notRoutable(r.URL.Path)
	}
	return reply{result: z.json()}, nil
}

type zoneJSON struct {
	ID              string      `json:"id"`
	Name            string      `json:"name"`
	Status          string      `json:"status"`
	Paused          bool        `json:"paused"`
	Type            string      `json:"type"`
	DevelopmentMode int         `json:"development_mode"`
	NameServers     []string    `json:"name_servers"`
	Account         zoneAccount `json:"account"`
	Permissions     []string    `json:"permissions"`
	Plan            zonePlan    `json:"plan"`
	CreatedOn       time.Time   `json:"created_on"`
	ModifiedOn      time.Time   `json:"modified_on"`
	ActivatedOn     time.Time   `json:"activated_on"`
}

type zoneAccount struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type zonePlan struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (z *zone) json() zoneJSON {
	return zoneJSON{
		ID: z.id, Name: z.name, Status: "active", Type: "full",
		NameServers: []string{"ada.ns.cloudflare.com", "bob.ns.cloudflare.com"},
		Account:     zoneAccount{ID: z.acct.id, Name: z.acct.name},
		Permissions: []string{"#dns_records:edit", "#dns_records:read", "#zone:read"},
		Plan:        zonePlan{ID: "0feeeeeeeeeeeeeeeeeeeeeeeeeeeeee", Name: "Free Website"},
		CreatedOn:   z.created, ModifiedOn: z.created, ActivatedOn: z.created,
	}
}
