// Package sni reads the TLS ClientHello a client sends first on a fresh
// connection and learns from it the server name (SNI, RFC 6066 §3) and the
// ALPN protocol list (RFC 7301 §3.1), without terminating TLS: it is what
// TLS passthrough routes on. Nothing is consumed: Read returns every byte
// it read, which the proxy replays to the backend it chose before relaying
// the rest of the stream, so the backend sees the client's exact bytes.
//
// The client is not trusted. Every length is checked against what holds
// it before it is used, every buffer is bounded by Limits, and Read stops
// as soon as it holds a whole ClientHello or knows the input is not one.
//
// # What is accepted
//
// The record layer (RFC 8446 §5.1, RFC 5246 §6.2):
//
//   - Every record up to the end of the ClientHello has content type 22
//     (handshake). A first byte that is no TLS content type at all (an
//     HTTP request's "G", a PROXY protocol header's "P") is ErrNotTLS, as
//     is a first record whose version's major byte is not 3, found from
//     the first byte or two without waiting for more. A first byte of
//     0x80 is the SSLv2-compatible hello (RFC 5246 appendix E.2), which is
//     refused with ErrNotTLS too. An alert (21), change_cipher_spec (20),
//     application_data (23) or heartbeat (24) record before or inside the
//     ClientHello is ErrMalformed.
//   - The legacy record version is 0x0301, 0x0302 or 0x0303 in every
//     record (RFC 8446 §5.1, appendix D); 0x0300 (SSL 3.0, RFC 7568) and
//     anything above 0x0303 are ErrMalformed.
//   - A record's length is at least 1 (RFC 8446 §5.1: no zero-length
//     handshake fragments; ErrMalformed) and at most 2^14 (ErrTooLarge).
//   - The ClientHello may be fragmented over several records, down to one
//     byte each (RFC 8446 §5.1); it is reassembled, over at most
//     Limits.MaxRecords records (ErrTooLarge past that).
//
// The handshake layer (RFC 8446 §4):
//
//   - The first handshake message is of type 1, client_hello; any other
//     type is ErrMalformed, known from its first byte.
//   - Its 24-bit length is at most Limits.MaxHello (default 16 KiB), else
//     ErrTooLarge as soon as the length is read: no buffer is ever sized
//     from the client's word beyond that.
//   - Bytes after the ClientHello, in its last record or beyond, are the
//     client's next bytes: they are returned with the rest, not refused.
//
// The ClientHello's body (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2), which must
// be consumed exactly by its fields (anything else is ErrMalformed, naming
// the field):
//
//   - legacy_version (2 bytes; any value: the backend decides versions)
//     and random (32 bytes);
//   - legacy_session_id, at most 32 bytes;
//   - cipher_suites, of even length and at least 2 bytes;
//   - legacy_compression_methods, at least 1 byte;
//   - then either nothing (a TLS 1.2 or older hello may have no
//     extensions) or the extensions, whose 2-byte length must equal
//     exactly the rest of the body. Each extension's type and length must
//     fit (RFC 8446 §4.2), and no type may appear twice.
//   - server_name (type 0, RFC 6066 §3): a non-empty ServerNameList, each
//     entry a name_type and a non-empty 2-byte-length-prefixed name,
//     nothing after the list. Entries of a name_type other than 0
//     (host_name) are skipped; a second host_name is refused; a host name
//     with a trailing dot is refused. The name is returned as sent, not
//     lowercased and not checked further (it may hold any byte): routing
//     compares it with validated hostnames, case-insensitively, and must
//     quote it when it logs it.
//   - application_layer_protocol_negotiation (type 16, RFC 7301 §3.1): a
//     non-empty list of non-empty protocol names, nothing after it,
//     returned in the client's order.
//   - Other extensions are skipped after their framing is checked: their
//     contents are the backend's business.
//
// # Compared with crypto/tls
//
// For the fields it parses the package follows crypto/tls's server
// (clientHelloMsg.unmarshal and the record layer before the first
// handshake message), and a fuzz test holds the two together: whenever
// crypto/tls takes a ClientHello far enough to call GetConfigForClient,
// Read takes it and returns the same name and protocols. Read is stricter
// where the RFCs are, by design:
//
//   - record versions below 0x0301 or above 0x0303 (crypto/tls takes any
//     below 0x1000 on the first records);
//   - an alert record before the ClientHello or between its fragments
//     (crypto/tls drops warning alerts and reads on; RFC 8446 §5.1 says
//     handshake messages are not interleaved with other record types);
//   - a legacy_session_id over 32 bytes, empty cipher_suites and empty
//     legacy_compression_methods (crypto/tls reads them and fails later or
//     not at all);
//   - a ClientHello over Limits.MaxHello (crypto/tls's bound is 64 KiB),
//     or spread over more than Limits.MaxRecords records.
//
// It is more lenient in two ways, both leaving the backend to refuse what
// it would refuse anyway. It does not look inside extensions other than
// server_name and ALPN, so a hello with, say, an empty supported_groups
// list, a misplaced pre_shared_key or a garbled encrypted_client_hello is
// routed here. And it returns as soon as the hello is whole, without
// waiting for the rest of the record that ends it, which crypto/tls reads
// before it looks at the hello.
//
// # Encrypted Client Hello
//
// With ECH (the encrypted_client_hello extension) the real server name is
// in the encrypted inner hello; the name seen here is the outer hello's,
// the public name of the client-facing server. Passthrough therefore
// routes such connections on the public name, and the backend that holds
// the ECH keys decrypts the rest.
//
// # Deadlines
//
// Read blocks as long as its reader does. A client that sends nothing, or
// one byte a second, would hold it forever, so Read must be given a
// connection with a read deadline; ReadConn sets one (Limits.Timeout) on a
// net.Conn and clears it afterwards.
//
// # Memory
//
// Read reads into the caller's buffer, growing it only when the hello
// does not fit, and never past Limits.MaxBytes. A hello that arrives in
// one record is parsed where it lies; a fragmented one is reassembled into
// one buffer of its declared length. Parsing allocates only what it
// returns: the server name, and the ALPN list and its names.
package sni
