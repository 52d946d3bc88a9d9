// This file implements the golden tests' side of stream routes: loading
// them, and walking them through the Cache.

package translate_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// dataplaneServesStreams: the data plane in this tree takes TCP and TLS
// listeners and stream routes. Until it does, a golden input with stream
// routes is not loaded into it (its config is still compared with the
// golden output).
const dataplaneServesStreams = false

// loadGoldenFile loads a golden input. TCPRoutes and TLSRoutes are decoded
// here, whether or not standalone mode reads them yet, each with a UID
// of its identity and a resourceVersion of its document, as standalone
// mode gives them; they must carry their creationTimestamp.
func loadGoldenFile(name string, data []byte) (*translate.Snapshot, error) {
	var rest [][]byte
	var tcp []*gwv1.TCPRoute
	var tls []*gwv1.TLSRoute
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, err
		}
		var err error
		switch head.Kind {
		case "TCPRoute":
			r := &gwv1.TCPRoute{}
			err = yaml.UnmarshalStrict(doc, r)
			stamp(head.Kind, &r.ObjectMeta.Namespace, r.Name, &r.ObjectMeta.UID, &r.ObjectMeta.ResourceVersion, doc)
			tcp = append(tcp, r)
		case "TLSRoute":
			r := &gwv1.TLSRoute{}
			err = yaml.UnmarshalStrict(doc, r)
			stamp(head.Kind, &r.ObjectMeta.Namespace, r.Name, &r.ObjectMeta.UID, &r.ObjectMeta.ResourceVersion, doc)
			tls = append(tls, r)
		default:
			rest = append(rest, doc)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, head.Kind, err)
		}
	}
	snap, err := standalone.LoadBytes(name, bytes.Join(rest, []byte("\n---\n")))
	if err != nil {
		return nil, err
	}
	snap.TCPRoutes = append(snap.TCPRoutes, tcp...)
	snap.TLSRoutes = append(snap.TLSRoutes, tls...)
	return snap, nil
}

func stamp(kind string, ns *string, name string, uid *types.UID, rv *string, doc []byte) {
	if *ns == "" {
		*ns = "default"
	}
	h := sha256.Sum256([]byte(kind + "/" + *ns + "/" + name))
	*uid = types.UID(hex.EncodeToString(h[:16]))
	d := sha256.Sum256(doc)
	*rv = hex.EncodeToString(d[:8])
}

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

// hasStreams reports whether a config has TCP or TLS listeners.
func hasStreams(cfg *proxycfg.Config) bool {
	return slices.ContainsFunc(cfg.Listeners, func(l proxycfg.Listener) bool {
		return l.Protocol == proxycfg.ListenerTCP || l.Protocol == proxycfg.ListenerTLS
	})
}
