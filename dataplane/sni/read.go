// This file implements the record layer: reading from the client until a
// whole ClientHello is held, reassembling it across records, and the
// limits and errors.

package sni

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// Hello is what the proxy learns from a ClientHello.
type Hello struct {
	// ServerName is the server_name extension's host_name as sent (not
	// lowercased), or "" when the client sent none.
	ServerName string
	// ALPN is the client's application protocols, in its order, or nil
	// when it offered none.
	ALPN []string
}

// Defaults of Limits' zero fields.
const (
	// DefaultMaxHello bounds the ClientHello's body. Browsers' hellos,
	// post-quantum key shares included, are under 2 KiB.
	DefaultMaxHello = 16 << 10
	// DefaultMaxRecords bounds the records a ClientHello is spread over.
	// Clients send it in one; tools that split it to get past filters use
	// a few.
	DefaultMaxRecords = 64
	// DefaultTimeout is ReadConn's deadline.
	DefaultTimeout = 10 * time.Second
)

// Limits bound what a client can make Read hold and wait for. A zero
// field takes its default.
type Limits struct {
	// MaxHello bounds the ClientHello's handshake body, its 24-bit
	// length (DefaultMaxHello).
	MaxHello int
	// MaxRecords bounds the TLS records the ClientHello may span
	// (DefaultMaxRecords).
	MaxRecords int
	// MaxBytes bounds the bytes read in all, record headers and bytes
	// after the hello included. It defaults to what the largest hello
	// allowed takes in the most records allowed:
	// MaxHello + 4 + 5*MaxRecords.
	MaxBytes int
	// Timeout is how long ReadConn waits for the whole hello
	// (DefaultTimeout).
	Timeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxHello <= 0 {
		l.MaxHello = DefaultMaxHello
	}
	if l.MaxRecords <= 0 {
		l.MaxRecords = DefaultMaxRecords
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = l.MaxHello + handshakeHeaderLen + recordHeaderLen*l.MaxRecords
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// The errors Read returns for what the client sent. Each is wrapped with
// the field at fault; test with errors.Is.
var (
	// ErrNotTLS: the first bytes are not a TLS record (an HTTP request,
	// an SSLv2-compatible hello, anything else).
	ErrNotTLS = errors.New("sni: not TLS")
	// ErrTooLarge: a record, the ClientHello or the bytes before its end
	// are over a limit.
	ErrTooLarge = errors.New("sni: ClientHello too large")
	// ErrMalformed: TLS records that do not hold a well-formed
	// ClientHello.
	ErrMalformed = errors.New("sni: malformed ClientHello")
)

// formatError is ErrNotTLS, ErrTooLarge or ErrMalformed with the field at
// fault.
type formatError struct {
	kind   error
	field  string
	detail string
}

func (e *formatError) Error() string { return e.kind.Error() + ": " + e.field + ": " + e.detail }
func (e *formatError) Unwrap() error { return e.kind }

func notTLS(field, format string, args ...any) error {
	return &formatError{ErrNotTLS, field, fmt.Sprintf(format, args...)}
}

func tooLarge(field, format string, args ...any) error {
	return &formatError{ErrTooLarge, field, fmt.Sprintf(format, args...)}
}

func malformed(field, format string, args ...any) error {
	return &formatError{ErrMalformed, field, fmt.Sprintf(format, args...)}
}

const (
	recordHeaderLen    = 5
	handshakeHeaderLen = 4
	maxRecordLen       = 1 << 14 // RFC 8446 §5.1, RFC 5246 §6.2.1

	typeChangeCipherSpec = 20
	typeAlert            = 21
	typeHandshake        = 22 // the only one taken
	typeApplicationData  = 23
	typeHeartbeat        = 24

	typeClientHello = 1

	// maxEmptyReads is how many reads returning nothing in a row Read
	// takes before it gives up (io.ErrNoProgress).
	maxEmptyReads = 100
	// minGrow is the least a buffer is grown to.
	minGrow = 2 << 10
)

// Read reads from r until it holds a whole ClientHello, and returns what
// it says and every byte read, for the caller to replay to the backend.
// The bytes are read into buf from its start (its contents are
// overwritten), which is grown only when the hello does not fit in its
// capacity; the slice returned is buf or its replacement. A 2 KiB buffer
// holds nearly every hello.
//
// Read stops reading as soon as it holds the whole hello, or knows that
// the input is not one; it may have read some bytes past the hello, which
// are returned with it. It reads at most lim.MaxBytes bytes. It returns
// ErrNotTLS, ErrTooLarge or ErrMalformed (wrapped with the field at fault)
// for what the client sent, io.EOF when the client sent nothing before
// closing, io.ErrUnexpectedEOF (wrapped) when it closed within the hello,
// and r's errors as they are. The bytes read are returned with an error
// too.
//
// Read blocks as long as r does: r must have a read deadline, or be
// wrapped so that reads end (ReadConn sets one on a net.Conn).
func Read(r io.Reader, buf []byte, lim Limits) (Hello, []byte, error) {
	lim = lim.withDefaults()
	buf = buf[:0]
	p := reassembler{lim: lim, inPlace: -1}
	empty := 0
	for {
		if len(buf) >= lim.MaxBytes {
			return Hello{}, buf, tooLarge("input", "no whole ClientHello in %d bytes", lim.MaxBytes)
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(2*cap(buf), minGrow), lim.MaxBytes)-len(buf))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), lim.MaxBytes)])
		if n > 0 {
			empty = 0
			buf = buf[:len(buf)+n]
			body, done, perr := p.feed(buf)
			if perr != nil {
				return Hello{}, buf, perr
			}
			if done {
				h, perr := parseHello(body)
				return h, buf, perr
			}
		}
		switch {
		case err == io.EOF && len(buf) == 0:
			return Hello{}, buf, io.EOF
		case err == io.EOF:
			return Hello{}, buf, fmt.Errorf("sni: ClientHello cut short after %d bytes: %w", len(buf), io.ErrUnexpectedEOF)
		case err != nil:
			return Hello{}, buf, err
		case n == 0:
			if empty++; empty >= maxEmptyReads {
				return Hello{}, buf, io.ErrNoProgress
			}
		}
	}
}

// ReadConn is Read on a connection, within lim.Timeout: it sets c's read
// deadline, reads, and clears the deadline again (a deadline the caller
// had set is gone too). When the client is too
// slow the error is the deadline's (errors.Is(err,
// os.ErrDeadlineExceeded)).
func ReadConn(c net.Conn, buf []byte, lim Limits) (Hello, []byte, error) {
	lim = lim.withDefaults()
	if err := c.SetReadDeadline(time.Now().Add(lim.Timeout)); err != nil {
		return Hello{}, buf[:0], err
	}
	h, b, err := Read(c, buf, lim)
	if derr := c.SetReadDeadline(time.Time{}); err == nil && derr != nil {
		return Hello{}, b, derr
	}
	return h, b, err
}

// reassembler follows the records in the bytes read so far and gathers
// the ClientHello's body from their payloads. It checks each byte once,
// as it arrives.
type reassembler struct {
	lim     Limits
	off     int // bytes of buf gone through
	recLeft int // payload bytes of the current record not yet arrived; 0 between records
	records int

	hdr     [handshakeHeaderLen]byte // the handshake header, as it arrives
	nhdr    int
	bodyLen int

	// inPlace is where the body starts in buf when it lies whole in the
	// first record, else -1.
	inPlace int
	// body gathers a body spread over several records.
	body []byte
}

// feed goes through buf from where it stopped (buf holds the same bytes
// as before, and more). It returns the hello's body once it is whole.
func (p *reassembler) feed(buf []byte) (body []byte, done bool, err error) {
	for p.off < len(buf) {
		if p.recLeft == 0 {
			h := buf[p.off:]
			if err := p.checkRecordHeader(h); err != nil {
				return nil, false, err
			}
			if len(h) < recordHeaderLen {
				return nil, false, nil
			}
			p.records++
			if p.records > p.lim.MaxRecords {
				return nil, false, tooLarge("records", "the ClientHello spans more than %d records", p.lim.MaxRecords)
			}
			p.recLeft = int(h[3])<<8 | int(h[4])
			p.off += recordHeaderLen
			continue
		}
		start := p.off
		end := min(len(buf), start+p.recLeft)
		p.off, p.recLeft = end, p.recLeft-(end-start)
		i := start
		for ; p.nhdr < handshakeHeaderLen && i < end; i++ {
			p.hdr[p.nhdr] = buf[i]
			p.nhdr++
			if err := p.headerDone(buf, i+1); err != nil {
				return nil, false, err
			}
		}
		if p.nhdr < handshakeHeaderLen {
			continue
		}
		if p.inPlace >= 0 {
			if end-p.inPlace >= p.bodyLen {
				return buf[p.inPlace : p.inPlace+p.bodyLen], true, nil
			}
			continue
		}
		take := min(end-i, p.bodyLen-len(p.body))
		p.body = append(p.body, buf[i:i+take]...)
		if len(p.body) == p.bodyLen {
			return p.body, true, nil
		}
	}
	return nil, false, nil
}

// checkRecordHeader checks as much of a record header as h holds.
func (p *reassembler) checkRecordHeader(h []byte) error {
	first := p.records == 0
	if typ := h[0]; typ != typeHandshake {
		name := recordTypeName(typ)
		switch {
		case first && typ == 0x80:
			return notTLS("record type", "0x80 starts an SSLv2-compatible ClientHello (RFC 5246 appendix E.2), which is not taken")
		case first && name == "":
			return notTLS("record type", "%#02x is no TLS content type", typ)
		case first:
			return malformed("record type", "%s record before the ClientHello", name)
		case name == "":
			return malformed("record type", "content type %#02x inside the ClientHello", typ)
		default:
			return malformed("record type", "%s record inside the ClientHello", name)
		}
	}
	if len(h) >= 2 && h[1] != 3 {
		if first {
			return notTLS("record version", "major version %d, not 3", h[1])
		}
		return malformed("record version", "major version %d, not 3", h[1])
	}
	if len(h) >= 3 && (h[2] < 1 || h[2] > 3) {
		return malformed("record version", "0x03%02x, want 0x0301 to 0x0303", h[2])
	}
	if len(h) >= recordHeaderLen {
		switch n := int(h[3])<<8 | int(h[4]); {
		case n == 0:
			return malformed("record length", "0: an empty handshake record")
		case n > maxRecordLen:
			return tooLarge("record length", "%d, more than 2^14", n)
		}
	}
	return nil
}

// headerDone checks the handshake header once its nhdr bytes have come,
// the last at buf[next-1].
func (p *reassembler) headerDone(buf []byte, next int) error {
	switch p.nhdr {
	case 1:
		if p.hdr[0] != typeClientHello {
			return malformed("handshake type", "%d, not client_hello (1)", p.hdr[0])
		}
	case handshakeHeaderLen:
		p.bodyLen = int(p.hdr[1])<<16 | int(p.hdr[2])<<8 | int(p.hdr[3])
		if p.bodyLen > p.lim.MaxHello {
			return tooLarge("handshake length", "%d, more than %d", p.bodyLen, p.lim.MaxHello)
		}
		// next is where the body starts; the bytes of this record not yet
		// gone through are p.off-next plus p.recLeft.
		inRecord := p.off - next + p.recLeft
		if p.records == 1 && p.bodyLen <= inRecord {
			p.inPlace = next
			if next+p.bodyLen > p.lim.MaxBytes {
				return tooLarge("handshake length", "%d: the ClientHello would end past %d bytes", p.bodyLen, p.lim.MaxBytes)
			}
			return nil
		}
		// At least one more record header is needed.
		if next+p.bodyLen+recordHeaderLen > p.lim.MaxBytes {
			return tooLarge("handshake length", "%d: the ClientHello would end past %d bytes", p.bodyLen, p.lim.MaxBytes)
		}
		p.body = make([]byte, 0, p.bodyLen)
	}
	return nil
}

func recordTypeName(typ byte) string {
	switch typ {
	case typeChangeCipherSpec:
		return "change_cipher_spec"
	case typeAlert:
		return "alert"
	case typeApplicationData:
		return "application_data"
	case typeHeartbeat:
		return "heartbeat"
	}
	return ""
}
