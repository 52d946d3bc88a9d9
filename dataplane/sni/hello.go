// This file implements the ClientHello body's parser (RFC 8446 §4.1.2)
// and the two extensions it reads: server_name and ALPN.

package sni

const (
	extServerName = 0  // RFC 6066 §3
	extALPN       = 16 // RFC 7301 §3.1

	nameTypeHostName = 0

	maxSessionID = 32

	// smallExtensions is how many extension types the duplicate check
	// holds in a plain array; past that it takes a bitmap of all 2^16.
	smallExtensions = 32
)

// cursor reads a ClientHello's fields, never past its end.
type cursor []byte

func (c *cursor) empty() bool { return len(*c) == 0 }

func (c *cursor) bytes(n int) ([]byte, bool) {
	if len(*c) < n {
		return nil, false
	}
	b := (*c)[:n]
	*c = (*c)[n:]
	return b, true
}

func (c *cursor) uint8() (int, bool) {
	b, ok := c.bytes(1)
	if !ok {
		return 0, false
	}
	return int(b[0]), true
}

func (c *cursor) uint16() (int, bool) {
	b, ok := c.bytes(2)
	if !ok {
		return 0, false
	}
	return int(b[0])<<8 | int(b[1]), true
}

// vec8 and vec16 read a vector with a 1- or 2-byte length.
func (c *cursor) vec8() (cursor, bool) {
	n, ok := c.uint8()
	if !ok {
		return nil, false
	}
	b, ok := c.bytes(n)
	return b, ok
}

func (c *cursor) vec16() (cursor, bool) {
	n, ok := c.uint16()
	if !ok {
		return nil, false
	}
	b, ok := c.bytes(n)
	return b, ok
}

// parseHello parses a ClientHello's body, the bytes after its handshake
// header.
func parseHello(body []byte) (Hello, error) {
	c := cursor(body)
	if _, ok := c.bytes(2); !ok {
		return Hello{}, malformed("legacy_version", "cut short")
	}
	if _, ok := c.bytes(32); !ok {
		return Hello{}, malformed("random", "cut short")
	}
	sid, ok := c.vec8()
	switch {
	case !ok:
		return Hello{}, malformed("legacy_session_id", "cut short")
	case len(sid) > maxSessionID:
		return Hello{}, malformed("legacy_session_id", "%d bytes, more than %d", len(sid), maxSessionID)
	}
	suites, ok := c.vec16()
	switch {
	case !ok:
		return Hello{}, malformed("cipher_suites", "cut short")
	case len(suites) == 0:
		return Hello{}, malformed("cipher_suites", "empty")
	case len(suites)%2 != 0:
		return Hello{}, malformed("cipher_suites", "odd length %d", len(suites))
	}
	methods, ok := c.vec8()
	switch {
	case !ok:
		return Hello{}, malformed("legacy_compression_methods", "cut short")
	case len(methods) == 0:
		return Hello{}, malformed("legacy_compression_methods", "empty")
	}
	if c.empty() {
		// A TLS 1.2 or older hello may end here (RFC 5246 §7.4.1.2).
		return Hello{}, nil
	}
	exts, ok := c.vec16()
	switch {
	case !ok:
		return Hello{}, malformed("extensions", "length %d past the end of the hello", len(c))
	case !c.empty():
		return Hello{}, malformed("extensions", "%d bytes after them", len(c))
	}

	var h Hello
	var seen seenTypes
	for !exts.empty() {
		typ, ok := exts.uint16()
		if !ok {
			return Hello{}, malformed("extension", "type cut short")
		}
		data, ok := exts.vec16()
		if !ok {
			return Hello{}, malformed("extension", "type %d: length past the end of the extensions", typ)
		}
		if seen.add(uint16(typ)) {
			return Hello{}, malformed("extension", "type %d twice", typ)
		}
		var err error
		switch typ {
		case extServerName:
			h.ServerName, err = parseServerName(data)
		case extALPN:
			h.ALPN, err = parseALPN(data)
		}
		if err != nil {
			return Hello{}, err
		}
	}
	return h, nil
}

// parseServerName parses server_name's extension_data (RFC 6066 §3).
func parseServerName(data cursor) (string, error) {
	list, ok := data.vec16()
	switch {
	case !ok:
		return "", malformed("server_name", "list length past the extension's end")
	case !data.empty():
		return "", malformed("server_name", "%d bytes after the list", len(data))
	case list.empty():
		return "", malformed("server_name", "empty list")
	}
	var host []byte
	for !list.empty() {
		typ, _ := list.uint8() // the list is not empty
		name, ok := list.vec16()
		switch {
		case !ok:
			return "", malformed("server_name", "name length past the list's end")
		case len(name) == 0:
			return "", malformed("server_name", "empty name")
		case typ != nameTypeHostName:
			continue
		case host != nil:
			return "", malformed("server_name", "a second host_name")
		case name[len(name)-1] == '.':
			return "", malformed("server_name", "host_name with a trailing dot")
		}
		host = name
	}
	return string(host), nil
}

// parseALPN parses application_layer_protocol_negotiation's
// extension_data (RFC 7301 §3.1). The names share one string.
func parseALPN(data cursor) ([]string, error) {
	list, ok := data.vec16()
	switch {
	case !ok:
		return nil, malformed("alpn", "list length past the extension's end")
	case !data.empty():
		return nil, malformed("alpn", "%d bytes after the list", len(data))
	case list.empty():
		return nil, malformed("alpn", "empty list")
	}
	n := 0
	for c := list; !c.empty(); n++ {
		name, ok := c.vec8()
		switch {
		case !ok:
			return nil, malformed("alpn", "name length past the list's end")
		case len(name) == 0:
			return nil, malformed("alpn", "empty protocol name")
		}
	}
	all := string(list)
	protos := make([]string, 0, n)
	for i := 0; i < len(all); {
		l := int(all[i])
		protos = append(protos, all[i+1:i+1+l])
		i += 1 + l
	}
	return protos, nil
}

// seenTypes tells extension types seen before. Hellos carry a few dozen
// at most, which a linear scan of an array handles; a hostile one with
// thousands gets a bitmap, so the check stays linear.
type seenTypes struct {
	small [smallExtensions]uint16
	n     int
	bits  []uint64
}

// add records typ and reports whether it was seen before.
func (s *seenTypes) add(typ uint16) bool {
	if s.bits != nil {
		w, b := typ/64, uint64(1)<<(typ%64)
		dup := s.bits[w]&b != 0
		s.bits[w] |= b
		return dup
	}
	for _, t := range s.small[:s.n] {
		if t == typ {
			return true
		}
	}
	if s.n < smallExtensions {
		s.small[s.n] = typ
		s.n++
		return false
	}
	s.bits = make([]uint64, 1<<16/64)
	for _, t := range s.small {
		s.bits[t/64] |= 1 << (t % 64)
	}
	s.bits[typ/64] |= 1 << (typ % 64)
	return false
}
