package cloudflare_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// planeWish is a Gateway's own tunnel, by name, created at since, whose
// status says, from now, that tunnelgate creates it (the intent).
func planeWish(gateway, tunnel string, since time.Time, hosts ...string) cloudflare.Desired {
	d := desired(hosts...)
	d.Class = "prod/team-a/" + gateway
	d.Since = since
	d.CreateIntent = translate.TunnelIntent{Name: tunnel, Since: time.Now()}
	d.Spec.Tunnel = &v1alpha1.TunnelRef{Name: tunnel, TokenSecretRef: &v1alpha1.SecretKeyRef{Namespace: "team-a", Name: gateway + "-tunnel", Key: "token"}}
	d.Spec.DNS = &v1alpha1.DNSSettings{Enabled: true, OwnerID: cloudflare.PlaneOwner("prod", "team-a", gateway)}
	return d
}

// departing is the wish after its Gateway was deleted.
func departing(d cloudflare.Desired, deleteTunnel bool, recorded string) cloudflare.Desired {
	d.Hostnames, d.Departing, d.DeleteTunnel, d.CreatedTunnel = nil, true, deleteTunnel, recorded
	d.Spec.Tunnel.TokenSecretRef = nil
	return d
}

func tunnelNamed(w *world, name string) (id string, deleted bool) {
	for _, tn := range w.f.Tunnels(account) {
		if tn.Name == name {
			id, deleted = tn.ID, !tn.DeletedAt.IsZero()
		}
	}
	return id, deleted
}

// A deleted Gateway's own tunnel: its DNS records go in every case; the
// tunnel is deleted only when asked and only if tunnelgate created it
// for that Gateway, its connectors removed first; otherwise it is kept
// with an empty document. The class's records are never touched.
func TestSyncerDeparture(t *testing.T) {
	since := time.Now().Add(-time.Hour)
	cases := []struct {
		name        string
		precreate   bool   // the tunnel exists before the Gateway names it
		restart     bool   // a new Syncer does the departure, knowing only the status record
		record      string // the status record's tunnel: "own" for the right one
		deleteAsked bool
		newGateway  bool // the Gateway is younger than the tunnel
		wantDeleted bool
	}{
		{name: "kept without the opt-in", deleteAsked: false},
		{name: "deleted with the opt-in", deleteAsked: true, wantDeleted: true},
		{name: "deleted after a restart, by its status record", deleteAsked: true, restart: true, record: "own", wantDeleted: true},
		{name: "kept after a restart without a record", deleteAsked: true, restart: true},
		{name: "an existing tunnel taken over is kept", precreate: true, deleteAsked: true},
		{name: "a record naming a tunnel older than its Gateway is not believed", precreate: true, restart: true,
			record: "own", deleteAsked: true, newGateway: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, cloudflare.Options{DNSEvery: time.Hour})
			if tc.precreate {
				w.f.AddTunnel(account, "11111111-2222-4333-8444-555555555555", "team-a-gw")
			}
			class := desired("app.example.com")
			gwSince := since
			if tc.newGateway {
				gwSince = time.Now().Add(time.Hour)
			}
			plane := planeWish("gw", "team-a-gw", gwSince, "a.example.com", "b.example.org")
			w.s.Update([]cloudflare.Desired{class, plane})
			st := waitKey(t, w, plane.Class, func(s *translate.TunnelState) bool {
				return s.ID != "" && s.Pending == "" && len(s.DNS) == 2 && s.DNS["a.example.com"].Ready && s.DNS["b.example.org"].Ready
			})
			if st.Created == tc.precreate {
				t.Errorf("Created = %v for a tunnel that existed before: %v", st.Created, tc.precreate)
			}
			waitKey(t, w, "prod", func(s *translate.TunnelState) bool { return s.DNS["app.example.com"].Ready })
			own := st.ID
			for _, c := range []string{"c1", "c2"} {
				if err := w.f.Connect(account, own, c); err != nil {
					t.Fatal(err)
				}
			}

			record := ""
			if tc.record == "own" {
				record = own
			}
			gone := departing(plane, tc.deleteAsked, record)
			syncer := w.s
			if tc.restart {
				syncer = restartSyncer(t, w)
			}
			syncer.Update([]cloudflare.Desired{class, gone})
			deadline := time.Now().Add(10 * time.Second)
			for st = syncer.States()[gone.Class]; st == nil || !st.Departed; st = syncer.States()[gone.Class] {
				if time.Now().After(deadline) {
					t.Fatalf("not departed after 10s: %+v\n%s", st, w.logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}

			for _, zone := range []string{"zone-com", "zone-org"} {
				for k := range w.records(zone) {
					if strings.Contains(k, "a.example.com") || strings.Contains(k, "b.example.org") {
						t.Errorf("record %s left in %s", k, zone)
					}
				}
			}
			if recs := w.records("zone-com"); recs["CNAME app.example.com"] == "" {
				t.Errorf("the class's record went too: %v", recs)
			}
			_, deleted := tunnelNamed(w, "team-a-gw")
			if deleted != tc.wantDeleted {
				t.Fatalf("tunnel deleted: %v, want %v\n%s", deleted, tc.wantDeleted, w.logs.String())
			}
			if !deleted {
				if got := w.ingress(t, own); !slices.Equal(got, []string{"=http_status:404"}) {
					t.Errorf("kept tunnel's document %v: want the catch-all alone", got)
				}
				if n := len(w.f.Connections(account, own)); n != 2 {
					t.Errorf("a kept tunnel's connectors were removed: %d left", n)
				}
			}
		})
	}
}

// restartSyncer stops w's Syncer and starts another on the same fake, as a
// new leader or a restarted controller does: it knows nothing but what it
// is handed.
// A Gateway's own tunnel is created only once the Gateway's status says
// tunnelgate creates it (until then the state asks for that), and a
// replica that leads next, knowing only that intent, knows the tunnel
// made since as created for the Gateway, and one made before as not.
func TestSyncerTunnelIntent(t *testing.T) {
	w := newWorld(t, cloudflare.Options{DNSEvery: time.Hour})
	plane := planeWish("gw", "team-a-gw", time.Now().Add(-time.Hour), "a.example.com")
	asked := plane
	asked.CreateIntent = translate.TunnelIntent{}
	w.s.Update([]cloudflare.Desired{desired("app.example.com"), asked})
	waitKey(t, w, plane.Class, func(s *translate.TunnelState) bool { return s.AwaitsIntent && s.ID == "" })
	if id, _ := tunnelNamed(w, "team-a-gw"); id != "" {
		t.Fatalf("tunnel %s created before the Gateway's status said so", id)
	}

	plane.CreateIntent.Since = time.Now().Add(-time.Second)
	w.s.Update([]cloudflare.Desired{desired("app.example.com"), plane})
	st := waitKey(t, w, plane.Class, func(s *translate.TunnelState) bool { return s.ID != "" && !s.AwaitsIntent })
	if !st.Created {
		t.Errorf("the tunnel created for the intent is not Created: %+v", st)
	}

	// Another replica leads before the record (Created) was written: it
	// has the intent alone.
	next := restartSyncer(t, w)
	next.Update([]cloudflare.Desired{desired("app.example.com"), plane})
	deadline := time.Now().Add(10 * time.Second)
	for s := next.States()[plane.Class]; s == nil || s.ID == ""; s = next.States()[plane.Class] {
		if time.Now().After(deadline) {
			t.Fatalf("the next leader did not find the tunnel: %+v\n%s", s, w.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := next.States()[plane.Class]; !s.Created || s.ID != st.ID {
		t.Errorf("the next leader: %+v, want tunnel %s Created", s, st.ID)
	}

	// An intent recorded after the tunnel was made: not tunnelgate's.
	plane.CreateIntent.Since = time.Now().Add(time.Minute)
	later := cloudflare.New(cloudflare.Options{BaseURL: w.f.URL(), DNSEvery: time.Hour, Log: slog.New(slog.NewTextHandler(w.logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); later.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	later.Update([]cloudflare.Desired{desired("app.example.com"), plane})
	deadline = time.Now().Add(10 * time.Second)
	for s := later.States()[plane.Class]; s == nil || s.ID == ""; s = later.States()[plane.Class] {
		if time.Now().After(deadline) {
			t.Fatalf("no state: %+v\n%s", s, w.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := later.States()[plane.Class]; s.Created {
		t.Errorf("a tunnel older than the intent is Created: %+v", s)
	}
}

func restartSyncer(t *testing.T, w *world) *cloudflare.Syncer {
	t.Helper()
	w.cancel()
	<-w.done
	s := cloudflare.New(cloudflare.Options{BaseURL: w.f.URL(), DNSEvery: time.Hour,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(w.logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}
