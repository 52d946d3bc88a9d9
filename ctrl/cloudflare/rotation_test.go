// This file tests the rotation of a tunnel's credential against the fake.

package cloudflare_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// rotationCounts reads the rotations counter, by outcome.
func rotationCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "tunnelgate.cloudflare.tunnel.credential.rotations" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				o, _ := p.Attributes.Value("outcome")
				out[o.AsString()] += p.Value
			}
		}
	}
	return out
}

// patches counts the PATCHes of tunnels the fake served: new secrets.
func (w *world) patches() int {
	n := 0
	for _, c := range w.f.Calls() {
		if c.Method == "PATCH" && strings.Contains(c.Path, "/cfd_tunnel/") {
			n++
		}
	}
	return n
}

// rolls records what a rotation rolls and tells.
type rolls struct {
	mu     sync.Mutex
	stamps []time.Time
	events []cloudflare.RotationEvent
	fail   error // the next roll's, once
}

func (r *rolls) roll(_ context.Context, ref v1alpha1.SecretKeyRef, at time.Time) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail; err != nil {
		r.fail = nil
		return nil, err
	}
	r.stamps = append(r.stamps, at)
	return []string{ref.Name + "-connectors"}, nil
}

func (r *rolls) tell(ev cloudflare.RotationEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *rolls) stages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Stage)
	}
	return out
}

// A rotation asked on demand sets a new secret in Cloudflare, writes the
// token read back with the time and the request it answers, and then
// rolls the connectors; the old token no longer opens a connection, the
// new one does. The same request does not rotate again, even before the
// Secret is seen with its stamp, nor after a restart that reads the
// stamp from it; a failed roll is retried without a second new secret.
func TestRotationOnDemand(t *testing.T) {
	rl := &rolls{fail: errors.New("deployments: forbidden")}
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	w := newWorld(t, cloudflare.Options{Roll: rl.roll, OnRotation: rl.tell, Meter: meter})
	d := desired("app.example.com")
	w.s.Update([]cloudflare.Desired{d})
	w.waitState(t, "applied", func(st *translate.TunnelState) bool { return st.Pending == "" && st.ID != "" })
	old, _ := w.tokens.Load("tg/tunnel/token")
	if _, _, err := w.f.CheckTunnelToken(old.(string)); err != nil {
		t.Fatalf("the first token does not open a connection: %v", err)
	}

	d.Rotation = cloudflare.Rotation{Trigger: "now", Since: time.Now()}
	w.s.Update([]cloudflare.Desired{d})
	st := w.waitState(t, "rotated", func(st *translate.TunnelState) bool { return !st.Rotation.Last.IsZero() })
	if st.Rotation.Failed != "" || !st.Rotation.Asked || !st.Rotation.Next.IsZero() {
		t.Errorf("rotation state %+v, want rotated, on demand alone", st.Rotation)
	}
	tok, _ := w.tokens.Load("tg/tunnel/token")
	stamp, _ := w.stamps.Load("tg/tunnel/token")
	if tok == old {
		t.Fatal("the token was not written anew")
	}
	if _, _, err := w.f.CheckTunnelToken(old.(string)); err == nil {
		t.Error("the old token still opens a connection after the rotation")
	}
	if _, _, err := w.f.CheckTunnelToken(tok.(string)); err != nil {
		t.Errorf("the new token does not open a connection: %v", err)
	}
	if s := stamp.(cloudflare.Stamp); s.Trigger != "now" || !s.At.Equal(st.Rotation.Last) {
		t.Errorf("the Secret records %+v, want the request and %v", s, st.Rotation.Last)
	}
	if got, want := rl.stages(), []string{cloudflare.RotationStarted, cloudflare.RotationFailed, cloudflare.RotationRolling}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v: one new secret, the failed roll retried", got, want)
	}
	if n := w.patches(); n != 1 {
		t.Errorf("%d PATCHes of the tunnel, want 1", n)
	}

	// The same request again, before and after the Secret shows the stamp.
	s := stamp.(cloudflare.Stamp)
	w.s.Update([]cloudflare.Desired{d})
	d.Rotation.Last, d.Rotation.Handled = s.At, s.Trigger
	w.s.Update([]cloudflare.Desired{d})
	time.Sleep(300 * time.Millisecond)
	if n := w.patches(); n != 1 {
		t.Errorf("%d PATCHes of the tunnel after the same request, want 1", n)
	}

	// A restart: a new Syncer reads the stamp from the Secret.
	w.cancel()
	<-w.done
	w.start(t, cloudflare.Options{Roll: rl.roll, OnRotation: rl.tell, Meter: meter})
	w.s.Update([]cloudflare.Desired{d})
	st = w.waitState(t, "applied after the restart", func(st *translate.TunnelState) bool { return st.Pending == "" && st.ID != "" })
	if !st.Rotation.Last.Equal(s.At) {
		t.Errorf("after a restart the last rotation reads %v, want %v", st.Rotation.Last, s.At)
	}
	if n := w.patches(); n != 1 {
		t.Errorf("%d PATCHes of the tunnel after a restart, want 1", n)
	}

	// A new request rotates again.
	d.Rotation.Trigger = "again"
	w.s.Update([]cloudflare.Desired{d})
	w.waitState(t, "rotated again", func(*translate.TunnelState) bool { return len(rl.stages()) == 5 })
	if n := w.patches(); n != 2 {
		t.Errorf("%d PATCHes of the tunnel after a second request, want 2", n)
	}
	if s2, _ := w.stamps.Load("tg/tunnel/token"); s2.(cloudflare.Stamp).Trigger != "again" {
		t.Errorf("the Secret records %+v after the second request", s2)
	}
	if got := rotationCounts(t, reader); got["rotated"] != 2 || got["failed"] != 1 {
		t.Errorf("rotations counted %v, want 2 rotated and 1 failed step", got)
	}
}

// A rotation asked of a tunnel whose token tunnelgate does not write is
// refused, said once, and nothing is asked of Cloudflare for it.
func TestRotationRefused(t *testing.T) {
	rl := &rolls{}
	w := newWorld(t, cloudflare.Options{Roll: rl.roll, OnRotation: rl.tell})
	d := desired("app.example.com")
	d.Spec.Tunnel.TokenSecretRef = nil
	d.Rotation = cloudflare.Rotation{Trigger: "now", Refused: "tunnelgate does not write this tunnel's token"}
	w.s.Update([]cloudflare.Desired{d})
	st := w.waitState(t, "applied", func(st *translate.TunnelState) bool { return st.Pending == "" && st.ID != "" })
	if st.Rotation.Refused == "" || !st.Rotation.Last.IsZero() {
		t.Errorf("rotation state %+v, want refused", st.Rotation)
	}
	if got := rl.stages(); !slices.Equal(got, []string{cloudflare.RotationRefused}) {
		t.Errorf("events %v, want one refusal", got)
	}
	if n := w.patches(); n != 0 {
		t.Errorf("%d PATCHes of the tunnel, want none", n)
	}
}

// A schedule rotates once it has run since the token Secret was made, and
// then says when it is next due.
func TestRotationOnSchedule(t *testing.T) {
	rl := &rolls{}
	w := newWorld(t, cloudflare.Options{Roll: rl.roll, OnRotation: rl.tell})
	d := desired("app.example.com")
	d.Rotation = cloudflare.Rotation{Every: time.Hour, Since: time.Now().Add(-2 * time.Hour)}
	w.s.Update([]cloudflare.Desired{d})
	st := w.waitState(t, "rotated", func(st *translate.TunnelState) bool { return !st.Rotation.Last.IsZero() })
	if want := st.Rotation.Last.Add(time.Hour); !st.Rotation.Next.Equal(want) {
		t.Errorf("next rotation %v, want %v", st.Rotation.Next, want)
	}
	time.Sleep(200 * time.Millisecond)
	if n := w.patches(); n != 1 {
		t.Errorf("%d PATCHes of the tunnel, want 1", n)
	}
	if fmt.Sprint(rl.stamps) == "[]" {
		t.Error("nothing rolled")
	}
}

// A rotation overdue on a wish that cannot rotate now (a class held, a
// problem) does not make it due at once, over and over: it is looked at
// again at the drift check's pace.
func TestOverdueRotationWaits(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	w := newWorld(t, cloudflare.Options{TracerProvider: tp, DriftEvery: time.Hour})
	for _, d := range []cloudflare.Desired{
		func() cloudflare.Desired { d := desired("app.example.com"); d.Hold = true; return d }(),
		func() cloudflare.Desired {
			d := desired("app.example.com")
			d.Problem = "credentials Secret tg/cf not found"
			return d
		}(),
	} {
		d.Rotation = cloudflare.Rotation{Every: time.Hour, Since: time.Now().Add(-2 * time.Hour)}
		spans.Reset()
		w.s.Update([]cloudflare.Desired{d})
		time.Sleep(300 * time.Millisecond)
		n := 0
		for _, sp := range spans.GetSpans() {
			if sp.Name == "tunnelgate.cloudflare.sync" {
				n++
			}
		}
		if n == 0 || n > 3 {
			t.Errorf("hold %v, problem %q: %d syncs in 300 ms, want one or two", d.Hold, d.Problem, n)
		}
	}
	if n := w.patches(); n != 0 {
		t.Errorf("%d PATCHes of a tunnel that may not rotate now", n)
	}
}
