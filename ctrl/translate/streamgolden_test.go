// This file implements the golden walk's steps of stream routes through
// the Cache.

package translate_test

import (
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// walkStreamRoutes takes the stream routes away and back, one kind at a
// time, then edits each (a backend's weight), checking the translation
// after each step: the Cache must not patch across them (cache.go).
func walkStreamRoutes(s *translate.Snapshot, check func(step string)) {
	if len(s.TCPRoutes)+len(s.TLSRoutes) == 0 {
		return
	}
	tcp, tls := s.TCPRoutes, s.TLSRoutes
	s.TCPRoutes = nil
	check("TCPRoutes deleted")
	s.TLSRoutes = nil
	check("TLSRoutes deleted")
	check("steady without stream routes")
	s.TCPRoutes, s.TLSRoutes = tcp, tls
	check("stream routes back")
	for i := range s.TCPRoutes {
		c := newRV(s.TCPRoutes[i].DeepCopy())
		if len(c.Spec.Rules) > 0 && len(c.Spec.Rules[0].BackendRefs) > 0 {
			c.Spec.Rules[0].BackendRefs[0].Weight = ptr(int32(7))
		}
		s.TCPRoutes = append(slices.Clip(s.TCPRoutes[:i]), append([]*gwv1.TCPRoute{c}, s.TCPRoutes[i+1:]...)...)
		check("TCPRoute " + c.Name + " edited")
	}
	for i := range s.TLSRoutes {
		c := newRV(s.TLSRoutes[i].DeepCopy())
		c.Spec.Hostnames = append(c.Spec.Hostnames, "edited.example.com")
		s.TLSRoutes = append(slices.Clip(s.TLSRoutes[:i]), append([]*gwv1.TLSRoute{c}, s.TLSRoutes[i+1:]...)...)
		check("TLSRoute " + c.Name + " edited")
	}
}
