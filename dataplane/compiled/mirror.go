// This file compiles the RequestMirror filter.

package compiled

import (
	"fmt"
	"math/rand/v2"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Mirror is a compiled RequestMirror filter: a share of requests is copied
// to another cluster and the answers are thrown away.
//
// The client never waits on a Mirror: copies are sent by goroutines of
// their own, at most Options.MaxMirrors at a time; beyond that, and for
// requests whose body was too large to keep (maxReplayBody), the copy is
// dropped and counted in Stats.MirrorsDropped.
type Mirror struct {
	Cluster  int    // the cluster's ID
	num, den uint64 // share mirrored: num/den
}

func compileMirror(m *proxycfg.Mirror, cluster func(name string) (int, bool)) (*Mirror, error) {
	if m.Cluster == "" {
		return nil, fmt.Errorf("RequestMirror needs a cluster")
	}
	id, ok := cluster(m.Cluster)
	if !ok {
		return nil, fmt.Errorf("RequestMirror: cluster %q is not defined", m.Cluster)
	}
	mr := &Mirror{Cluster: id, num: 1, den: 1}
	switch {
	case m.Percent != nil && m.Fraction != nil:
		return nil, fmt.Errorf("RequestMirror: set percent or fraction, not both")
	case m.Percent != nil:
		if *m.Percent < 0 || *m.Percent > 100 {
			return nil, fmt.Errorf("RequestMirror: percent %d out of range 0-100", *m.Percent)
		}
		mr.num, mr.den = uint64(*m.Percent), 100
	case m.Fraction != nil:
		den := m.Fraction.Denominator
		if den <= 0 || m.Fraction.Numerator < 0 || m.Fraction.Numerator > den {
			return nil, fmt.Errorf("RequestMirror: fraction %d/%d is not between 0 and 1", m.Fraction.Numerator, den)
		}
		mr.num, mr.den = uint64(m.Fraction.Numerator), uint64(den)
	}
	return mr, nil
}

// Sampled draws whether this request is copied: true for the mirror's
// share of requests.
func (m *Mirror) Sampled() bool {
	return m.num != 0 && (m.num >= m.den || rand.Uint64N(m.den) < m.num)
}
