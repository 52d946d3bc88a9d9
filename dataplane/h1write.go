package dataplane

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// outRequest is the request as it leaves for an upstream: the incoming
// request's header map is read, never modified, and the proxy's changes
// (header filters, forwarding headers, hop-by-hop removal) are applied as
// the head is written.
type outRequest struct {
	method string
	// target is the origin-form request target: path and "?query".
	target string
	host   string
	in     http.Header
	plan   *headerPlan
	// untrusted drops forwarding headers a client could forge (see
	// forwarded.go); nil on a listener that trusts its peer.
	untrusted bool
	// xffPrior are the X-Forwarded-For values kept from the request; peer
	// is appended after them. xfp is X-Forwarded-Proto.
	xffPrior  []string
	peer, xfp string
	// contentLength is the body length: 0 none, -1 unknown (sent chunked).
	contentLength int64
	// upgrade is the protocol of a WebSocket handshake, else "".
	upgrade string
	// traceparent and tracestate, when tracing, carry the attempt's span
	// context (W3C Trace Context) in place of the client's.
	traceparent, tracestate string
}

// writeHead writes the request line and header section. Headers follow
// RFC 9110 §7.6.1: hop-by-hop fields, and those named in Connection, are
// not forwarded; framing (Content-Length, Transfer-Encoding) is the proxy's
// own, since the body is re-framed.
func writeHead(bw *bufio.Writer, o *outRequest) {
	bw.WriteString(o.method)
	bw.WriteByte(' ')
	bw.WriteString(o.target)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(o.host)
	bw.WriteString("\r\n")
	conn := o.in["Connection"]
	for k, vs := range o.in {
		if !o.forwards(k, conn) {
			continue
		}
		for _, v := range vs {
			writeField(bw, k, v)
		}
	}
	if o.peer != "" && !o.plan.replaces("X-Forwarded-For") {
		bw.WriteString("X-Forwarded-For: ")
		for _, v := range o.xffPrior {
			bw.WriteString(v)
			bw.WriteString(", ")
		}
		bw.WriteString(o.peer)
		bw.WriteString("\r\n")
	}
	if o.xfp != "" && !o.plan.replaces("X-Forwarded-Proto") {
		writeField(bw, "X-Forwarded-Proto", o.xfp)
	}
	if o.plan != nil {
		for i := range o.plan.ops {
			op := &o.plan.ops[i]
			for _, v := range op.values {
				writeField(bw, op.name, v)
			}
		}
	}
	if o.traceparent != "" {
		writeField(bw, "Traceparent", o.traceparent)
		if o.tracestate != "" {
			writeField(bw, "Tracestate", o.tracestate)
		}
	}
	if o.upgrade != "" {
		writeField(bw, "Connection", "Upgrade")
		writeField(bw, "Upgrade", o.upgrade)
	}
	switch {
	case o.contentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), o.contentLength, 10))
		bw.WriteString("\r\n")
	case o.contentLength < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
}

// forwards reports whether the incoming field k goes out as it came:
// not hop-by-hop or named in Connection (conn, its values), not one the
// proxy writes itself, not a forgeable one from an untrusted peer, and
// not set or removed by the header plan. HTTP/1.1 and HTTP/2 forwarding
// both ask it.
func (o *outRequest) forwards(k string, conn []string) bool {
	if skipOutgoing(k) || (o.untrusted && forgeable(k)) {
		return false
	}
	if o.traceparent != "" && (k == "Traceparent" || k == "Tracestate") {
		return false // replaced by the attempt's own
	}
	if len(conn) > 0 && tokenIn(conn, k) {
		return false
	}
	touched, keep := o.plan.touches(k)
	return !touched || keep
}

func writeField(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(v)
	bw.WriteString("\r\n")
}

// skipOutgoing lists incoming fields the proxy never copies: hop-by-hop
// ones, framing, Host (written first), Expect (the proxy's server side has
// already answered 100-continue by reading the body), and the forwarding
// headers it rewrites.
func skipOutgoing(k string) bool {
	switch k {
	case "Host", "Content-Length", "Expect", "X-Forwarded-For", "X-Forwarded-Proto":
		return true
	}
	return hopByHop(k)
}

// copyBufPool holds buffers for bodies too large for the connection's
// own buffers.
var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// writeBody sends a request body with the framing writeHead announced.
// It returns the number of body bytes sent.
func writeBody(bw *bufio.Writer, body io.Reader, contentLength int64) (int64, error) {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	var sent int64
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if contentLength < 0 {
				bw.Write(strconv.AppendUint(bw.AvailableBuffer(), uint64(n), 16))
				bw.WriteString("\r\n")
			} else if sent+int64(n) > contentLength {
				return sent, errBodyLength
			}
			if _, err := bw.Write(buf[:n]); err != nil {
				return sent, err
			}
			if contentLength < 0 {
				bw.WriteString("\r\n")
			}
			sent += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return sent, &errClientBody{rerr}
		}
	}
	if contentLength < 0 {
		bw.WriteString("0\r\n\r\n")
	} else if sent != contentLength {
		return sent, errBodyLength
	}
	return sent, bw.Flush()
}

// errClientBody is a failure to read the client's request body: the
// client's fault (or gone), not the upstream's.
type errClientBody struct{ err error }

func (e *errClientBody) Error() string { return "reading request body: " + e.err.Error() }
func (e *errClientBody) Unwrap() error { return e.err }

var errBodyLength = &errClientBody{io.ErrUnexpectedEOF}
