package cffake_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/dns"

	"github.com/tunnelgate/tunnelgate/test/cffake"
)

func batch(c *cloudflare.Client, p dns.RecordBatchParams) (*dns.RecordBatchResponse, error) {
	p.ZoneID = zoneF
	return c.DNS.Records.Batch(context.Background(), p)
}

func TestBatchAppliesInOrder(t *testing.T) {
	f, c := setup(t)
	oldA := f.AddRecord(zoneID, cffake.Record{Type: "A", Name: "app", Content: "192.0.2.1"})
	owner := f.AddRecord(zoneID, cffake.Record{Type: "TXT", Name: "_gw.app", Content: "old"})
	other := f.AddRecord(zoneID, cffake.Record{Type: "CNAME", Name: "www", Content: "a.example.net"})

	// Replacing the A with a CNAME of the same name only works because
	// deletes run before posts.
	res, err := batch(c, dns.RecordBatchParams{
		Deletes: cloudflare.F([]dns.RecordBatchParamsDelete{{ID: cloudflare.F(oldA)}}),
		Patches: cloudflare.F([]dns.BatchPatchUnionParam{dns.BatchPatchTXTRecordParam{
			ID: cloudflare.F(owner), TXTRecordParam: dns.TXTRecordParam{Content: cloudflare.F("new")}}}),
		Puts: cloudflare.F([]dns.BatchPutUnionParam{dns.BatchPutCNAMERecordParam{
			ID: cloudflare.F(other), CNAMERecordParam: cname("www", "b.example.net", true)}}),
		Posts: cloudflare.F([]dns.RecordBatchParamsPostUnion{cname("app", tunnelID+".cfargotunnel.com", true)}),
	})
	check(t, err)
	if len(res.Deletes) != 1 || res.Deletes[0].ID != oldA || res.Deletes[0].Content != "192.0.2.1" ||
		len(res.Patches) != 1 || res.Patches[0].Content != "new" || res.Patches[0].Name != "_gw.app.example.com" ||
		len(res.Puts) != 1 || res.Puts[0].Content != "b.example.net" || !res.Puts[0].Proxied ||
		len(res.Posts) != 1 || res.Posts[0].Type != "CNAME" || res.Posts[0].ID == "" {
		t.Fatalf("batch result = %s", res.JSON.RawJSON())
	}
	var got []string
	for _, r := range f.Records(zoneID) {
		got = append(got, r.Type+" "+r.Name+" "+r.Content)
	}
	want := []string{"TXT _gw.app.example.com new", "CNAME www.example.com b.example.net",
		"CNAME app.example.com " + tunnelID + ".cfargotunnel.com"}
	if !slices.Equal(got, want) {
		t.Fatalf("records = %q, want %q", got, want)
	}

	body := string(f.Calls()[0].Body)
	for _, part := range []string{`"deletes":[{"id":"` + oldA + `"}]`, `"patches":[{"content":"new","id":"` + owner + `"}]`, `"posts":[{"content":`} {
		if !strings.Contains(body, part) {
			t.Errorf("batch body %s lacks %s", body, part)
		}
	}
}

func TestBatchIsAtomic(t *testing.T) {
	f, c := setup(t)
	keep := f.AddRecord(zoneID, cffake.Record{Type: "A", Name: "a", Content: "192.0.2.1"})
	before := f.Records(zoneID)

	for name, tc := range map[string]struct {
		p       dns.RecordBatchParams
		status  int
		code    int64
		pointer string
	}{
		"second post conflicts with the first": {dns.RecordBatchParams{
			Deletes: cloudflare.F([]dns.RecordBatchParamsDelete{{ID: cloudflare.F(keep)}}),
			Posts: cloudflare.F([]dns.RecordBatchParamsPostUnion{
				txt("fine", "v"), cname("x", "t.example.net", false), aRec("x", "192.0.2.5")}),
		}, http.StatusBadRequest, 81054, "/posts/2"},
		"delete of a missing record": {dns.RecordBatchParams{
			Deletes: cloudflare.F([]dns.RecordBatchParamsDelete{{ID: cloudflare.F(keep)}, {ID: cloudflare.F("missing")}}),
		}, http.StatusNotFound, 81044, "/deletes/1"},
		"post conflicts with a record the batch keeps": {dns.RecordBatchParams{
			Posts: cloudflare.F([]dns.RecordBatchParamsPostUnion{txt("fine", "v"), cname("a", "t.example.net", false)}),
		}, http.StatusBadRequest, 81053, "/posts/1"},
		"put of a missing record": {dns.RecordBatchParams{
			Posts: cloudflare.F([]dns.RecordBatchParamsPostUnion{txt("fine", "v")}),
			Puts:  cloudflare.F([]dns.BatchPutUnionParam{dns.BatchPutTXTRecordParam{ID: cloudflare.F("missing"), TXTRecordParam: txt("m", "v")}}),
		}, http.StatusNotFound, 81044, "/puts/0"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := batch(c, tc.p)
			e := apiErr(t, err, tc.status, tc.code)
			if e.Errors[0].Source.Pointer != tc.pointer {
				t.Errorf("error points at %q, want %q", e.Errors[0].Source.Pointer, tc.pointer)
			}
			if got := f.Records(zoneID); !slices.Equal(got, before) {
				t.Fatalf("failed batch changed records: %+v", got)
			}
		})
	}
}
