package cffake

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

type account struct {
	id, name string
	created  time.Time
}

// AddAccount adds an account the token can see.
func (f *Fake) AddAccount(id, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accounts = append(f.accounts, &account{id: id, name: name, created: now()})
}

func (f *Fake) account(id string) *account {
	for _, a := range f.accounts {
		if a.id == id {
			return a
		}
	}
	return nil
}

// mustAccount is for the seeding helpers: a test naming an unknown account
// is a bug in the test.
func (f *Fake) mustAccount(id string) *account {
	a := f.account(id)
	if a == nil {
		panic("cffake: unknown account " + id)
	}
	return a
}

func (f *Fake) routeAccounts() {
	f.handle("GET /accounts", f.listAccounts)
	f.handle("GET /accounts/{account_id}", f.getAccount)
}

func (f *Fake) listAccounts(r *http.Request, _ []byte) (reply, error) {
	q := r.URL.Query()
	var fs filters[*account]
	if n := q.Get("name"); n != "" {
		fs.add(func(a *account) bool { return strings.EqualFold(a.name, n) })
	}
	list := fs.apply(f.accounts, false)
	if q.Get("direction") == "desc" {
		list = slices.Clone(list)
		slices.Reverse(list)
	}
	page, info, err := paginate(q, list, accountPages)
	if err != nil {
		return reply{}, err
	}
	out := make([]accountJSON, len(page))
	for i, a := range page {
		out[i] = a.json()
	}
	return reply{result: out, info: info}, nil
}

func (f *Fake) getAccount(r *http.Request, _ []byte) (reply, error) {
	a := f.account(r.PathValue("account_id"))
	if a == nil {
		return reply{}, notRoutable(r.URL.Path)
	}
	return reply{result: a.json()}, nil
}

type accountJSON struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Type      string          `json:"type"`
	Settings  accountSettings `json:"settings"`
	CreatedOn time.Time       `json:"created_on"`
}

type accountSettings struct {
	EnforceTwofactor bool `json:"enforce_twofactor"`
}

func (a *account) json() accountJSON {
	return accountJSON{ID: a.id, Name: a.name, Type: "standard", CreatedOn: a.created}
}
