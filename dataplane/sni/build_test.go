// This file implements the tests' ClientHello builder: records,
// handshake messages and hello bodies put together field by field, so
// that each case can break exactly one rule.

package sni

import (
	"bytes"
	"slices"
)

func cat(parts ...[]byte) []byte { return slices.Concat(parts...) }

func u8(v int) []byte  { return []byte{byte(v)} }
func u16(v int) []byte { return []byte{byte(v >> 8), byte(v)} }
func u24(v int) []byte { return []byte{byte(v >> 16), byte(v >> 8), byte(v)} }

// v8 and v16 are a vector of the parts with a 1- or 2-byte length.
func v8(parts ...[]byte) []byte  { b := cat(parts...); return cat(u8(len(b)), b) }
func v16(parts ...[]byte) []byte { b := cat(parts...); return cat(u16(len(b)), b) }

// ext is an extension of type typ holding data.
func ext(typ int, data ...[]byte) []byte { return cat(u16(typ), v16(data...)) }

// hostName is a ServerNameList entry of name_type host_name.
func hostName(name string) []byte { return cat(u8(0), v16([]byte(name))) }

// sniExt is a server_name extension naming each entry.
func sniExt(entries ...[]byte) []byte { return ext(extServerName, v16(entries...)) }

// alpnExt is an ALPN extension offering protos.
func alpnExt(protos ...string) []byte {
	var list [][]byte
	for _, p := range protos {
		list = append(list, v8([]byte(p)))
	}
	return ext(extALPN, v16(list...))
}

// helloFields are a ClientHello body's fields, each already encoded with
// its length, so that a case can put any bytes in one of them.
type helloFields struct {
	version, random, sessionID, suites, methods []byte
	// exts is the extensions block, length included; nil leaves it out.
	exts []byte
}

// fields is a plain TLS 1.2-style hello with the extensions given.
func fields(exts ...[]byte) helloFields {
	return helloFields{
		version:   u16(0x0303),
		random:    bytes.Repeat([]byte{0xaa}, 32),
		sessionID: v8(bytes.Repeat([]byte{0x55}, 32)),
		suites:    v16(u16(0x1301), u16(0xc02f)),
		methods:   v8(u8(0)),
		exts:      v16(exts...),
	}
}

func (f helloFields) body() []byte {
	return cat(f.version, f.random, f.sessionID, f.suites, f.methods, f.exts)
}

// handshake is a client_hello handshake message around body.
func handshake(body []byte) []byte { return cat(u8(typeClientHello), u24(len(body)), body) }

// record is one TLS record of the given type and version.
func record(typ, version int, payload []byte) []byte {
	return cat(u8(typ), u16(version), u16(len(payload)), payload)
}

// records splits a handshake payload into handshake records of at most
// size bytes, record version 0x0301.
func records(payload []byte, size int) []byte {
	var out []byte
	for len(payload) > 0 {
		n := min(size, len(payload))
		out = append(out, record(typeHandshake, 0x0301, payload[:n])...)
		payload = payload[n:]
	}
	return out
}

// wire is body as a client sends it: one handshake record.
func wire(body []byte) []byte { return record(typeHandshake, 0x0301, handshake(body)) }
