package proxycfg

import (
	"slices"
	"testing"
)

// A listener's health check is part of its content: setting, changing
// or removing it gives the listener another stamp and the config another
// version, a delta carries it, and Split hands it to the part serving
// the listener.
func TestHealthCheckIsListenerContent(t *testing.T) {
	base := scaleConfig(20)
	with := func(hc *HealthCheck) *Config {
		c := *base
		c.Listeners = slices.Clone(base.Listeners)
		c.Listeners[3].HealthCheck = hc
		return &c
	}
	check := &HealthCheck{Path: "/.tunnelgate/health", Header: "X-Tunnelgate-Health", Token: "0123456789abcdef-secret"}
	other := *check
	other.Token = "another token of 16+ bytes"
	configs := []*Config{base, with(check), with(&other)}

	var stamps, unchanged []Stamp
	versions := map[string]bool{}
	for _, c := range configs {
		var e Encoder
		enc, err := e.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		stamps = append(stamps, enc.Listeners.Sums[3])
		versions[enc.Version] = true
		unchanged = append(unchanged, enc.Listeners.Sums[2])
	}
	if stamps[0] == stamps[1] || stamps[1] == stamps[2] || stamps[0] == stamps[2] {
		t.Errorf("the health check does not change the listener's stamp: %x", stamps)
	}
	if unchanged[0] != unchanged[1] || unchanged[1] != unchanged[2] {
		t.Error("a listener left alone got another stamp")
	}
	if len(versions) != len(configs) {
		t.Errorf("%d versions for %d configs differing in a health check", len(versions), len(configs))
	}
	if base.Equal(configs[1]) || configs[1].Equal(configs[2]) || !configs[1].Equal(with(check)) {
		t.Error("Equal does not look at the health check")
	}

	// Set, changed, removed: each delta applied gives the next config,
	// health check and all.
	for i, from := range configs {
		for j, to := range configs {
			if i != j {
				d := checkDelta(t, from, to)
				if adds(d.Listeners) != 1 {
					t.Errorf("config %d to %d: the delta brings %d listeners, want the one changed", i, j, adds(d.Listeners))
				}
			}
		}
	}

	parts := configs[1].Split(2, func(name string) []int {
		if name == base.Listeners[3].Name {
			return []int{1}
		}
		return []int{0}
	})
	if got := parts[1].Listeners; len(got) != 1 || !got[0].HealthCheck.Equal(check) {
		t.Errorf("Split's part has listeners %+v, want the one with its health check", got)
	}
}
