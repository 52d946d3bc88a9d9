// This file implements the access log's line for a relayed stream.

package observe

import (
	"strconv"
	"time"

	"github.com/valyala/bytebufferpool"

	"github.com/tunnelgate/tunnelgate/dataplane/pipe"
)

// StreamLine is one relayed stream (a TCPRoute's or TLSRoute's
// connection) as the access log shows it. Its keys are its own, beside
// Line's: "kind" tells the two apart, and "time", "client_ip", "route",
// "backend", "endpoint" and "duration_ms" mean what they mean there.
type StreamLine struct {
	Start    time.Time
	ClientIP string
	// Kind is the route's kind, TCPRoute or TLSRoute; Route its
	// "namespace/name".
	Kind, Route string
	// SNI is a TLS listener's connection's server name; logged when set.
	SNI      string
	Backend  string // the cluster
	Endpoint string
	// Result is what the pipe did: bytes each way, duration, end reason.
	Result pipe.Result
}

// WriteStream formats ln and queues it, as Write does a Line.
func (l *AccessLog) WriteStream(ln *StreamLine) {
	b := bytebufferpool.Get()
	b.B = ln.AppendJSON(b.B[:0])
	l.offer(b)
}

// AppendJSON appends ln as the access log writes it: one JSON object
// and a newline.
func (ln *StreamLine) AppendJSON(b []byte) []byte {
	b = append(b, `{"time":"`...)
	b = ln.Start.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","client_ip":`...)
	b = appendJSONString(b, ln.ClientIP)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, ln.Kind)
	b = append(b, `,"route":`...)
	b = appendJSONString(b, ln.Route)
	if ln.SNI != "" {
		b = append(b, `,"sni":`...)
		b = appendJSONString(b, ln.SNI)
	}
	b = append(b, `,"backend":`...)
	b = appendJSONString(b, ln.Backend)
	b = append(b, `,"endpoint":`...)
	b = appendJSONString(b, ln.Endpoint)
	b = append(b, `,"bytes_up":`...)
	b = strconv.AppendInt(b, ln.Result.ClientToBackend, 10)
	b = append(b, `,"bytes_down":`...)
	b = strconv.AppendInt(b, ln.Result.BackendToClient, 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(ln.Result.Duration.Microseconds())/1000, 'f', 3, 64)
	b = append(b, `,"end":`...)
	b = appendJSONString(b, string(ln.Result.End))
	return append(b, "}\n"...)
}
