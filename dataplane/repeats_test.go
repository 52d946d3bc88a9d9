package dataplane

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

func endpointsOf(addrs ...string) []proxycfg.Endpoint {
	eps := make([]proxycfg.Endpoint, len(addrs))
	for i, a := range addrs {
		eps[i].Address = a
	}
	return eps
}

// manyEndpoints are n distinct addresses, as a large Service has.
func manyEndpoints(n int) []proxycfg.Endpoint {
	eps := make([]proxycfg.Endpoint, n)
	for i := range eps {
		eps[i].Address = fmt.Sprintf("10.0.%d.%d:8080", i/256, i%256)
	}
	return eps
}

// A cluster state lists each address once, in the order of its first
// listing, short lists and long alike; a list without repeats is used as
// it is.
func TestWithoutRepeats(t *testing.T) {
	long := manyEndpoints(40)
	longRepeated := append(slices.Clone(long[:30]), long[3], long[29], long[30], long[0])
	longRepeated = append(longRepeated, long[31:]...)
	for _, c := range []struct {
		name     string
		in, want []proxycfg.Endpoint
	}{
		{"empty", nil, nil},
		{"one", endpointsOf("a:1"), endpointsOf("a:1")},
		{"short, none repeated", endpointsOf("a:1", "b:1", "c:1"), endpointsOf("a:1", "b:1", "c:1")},
		{"short, repeats", endpointsOf("a:1", "b:1", "a:1", "c:1", "b:1", "c:1"), endpointsOf("a:1", "b:1", "c:1")},
		{"long, none repeated", long, long},
		{"long, repeats", longRepeated, long},
	} {
		got := withoutRepeats(c.in)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if slices.Equal(c.in, c.want) && len(c.in) > 0 && &got[0] != &c.in[0] {
			t.Errorf("%s: a list without repeats was copied", c.name)
		}
	}
}

// BenchmarkWithoutRepeats is the cost of a cluster state's address list
// (every endpoint change of the cluster makes a state), by the number of
// endpoints.
func BenchmarkWithoutRepeats(b *testing.B) {
	for _, n := range []int{2, 16, 100, 1000} {
		eps := manyEndpoints(n)
		b.Run(fmt.Sprint("endpoints=", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				withoutRepeats(eps)
			}
		})
	}
}
