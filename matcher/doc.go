// Package matcher is tunnelgate's compiled router: it decides which
// HTTPRoute match wins a request, following the Gateway API precedence rules,
// without allocating and at a cost that does not grow with the number of
// routes.
//
// # What wins
//
// Every request is compared with rules (one Rule per HTTPRoute match) and the
// best matching rule wins. "Best" is a strict order on these criteria, each
// consulted only when all earlier ones tie:
//
//  1. Host: a rule serving the exact request host beats one serving it through
//     a wildcard; a longer wildcard ("*.a.example.com") beats a shorter one
//     ("*.example.com"); a rule without hostnames comes last.
//  2. Path kind: Exact, then RegularExpression (the spec leaves regex
//     precedence to implementations; we put it between the two), then
//     PathPrefix.
//  3. Among prefixes, the longer value, normalised, with trailing slashes
//     counted as one: "/abc/" beats "/abc", and both lose to "/abc/d".
//     Then the higher Rule.Precedence (0 unless set; GRPCRoute translation
//     uses it to rank service and method names).
//  4. A rule with a method beats one without.
//  5. More header conditions, then more query conditions.
//  6. The older route (Key.Created), then "{namespace}/{name}" compared as one
//     string, then rule index, then match index, then input order.
//
// Because host precedence comes first, a rule on a less specific host is
// still eligible when nothing on the more specific one matches: a request for
// api.example.com/other reaches a catch-all route when the api.example.com
// route only serves /v1. The spec words host specificity as precedence, not
// as a partition, and this is what users expect. Listener isolation (a more
// specific listener hiding a less specific one) is not a route rule: the data
// plane picks the listener first and each listener gets its own Table.
//
// # Conditions
//
//   - Host: the port and one trailing dot are dropped, ASCII case is folded.
//     "*.example.com" matches any host ending in ".example.com" with at least
//     one character in front ("a.example.com", "a.b.example.com"), never
//     "example.com". A host longer than a DNS name can be (253 bytes) only
//     reaches rules without hostnames.
//   - Path values are at most 4096 bytes once normalised (the Gateway API
//     allows 1024 characters).
//   - Path: the request path must already be in the canonical form
//     NormalizePath returns; Compile puts Exact and PathPrefix values through
//     the same function, so "/%7euser" and "/~user" are one path. Exact
//     compares whole strings. PathPrefix drops the value's trailing slashes
//     and matches when the path starts with the rest and ends there or goes on
//     with "/": "/abc" and "/abc/" both match "/abc", "/abc/" and "/abc/def"
//     but not "/abcd". Matching is case-sensitive.
//   - Regular expressions (paths, headers, query values) are RE2 and must
//     match the whole value: "/a.c" matches "/abc", not "/abcd".
//   - Method is compared exactly (methods are case-sensitive, RFC 9110 §9.1).
//   - Header names are case-insensitive. A header sent on several field lines
//     is compared as the lines' values joined with ", ", the single value
//     RFC 9110 §5.3 says they are equivalent to. "Host" is the request's Host.
//     An absent header never matches.
//   - Query parameter names are case-sensitive. The value compared is the
//     first one, as url.ParseQuery decodes the raw query (pairs split on "&",
//     "+" is a space, pairs with ";" or a bad escape skipped), which the spec
//     recommends. An absent parameter never matches.
//   - Only the first header (or query) condition with a given name counts;
//     later duplicates are ignored, as the spec requires, and do not count
//     for precedence either.
//
// # How the table is built
//
// Compile sorts the work so that Match only walks:
//
//   - Hosts. Exact hostnames go in an open-addressing hash table whose slots
//     hold the name itself (hosttable.go), kept in pages of 256 slots that
//     updated tables share. Wildcards go in a second such table keyed by
//     their suffix, a trie of labels read right to left stored flat:
//     "*.a.example.com" is found by probing a host's suffixes, longest
//     first. Every host entry is linked, at compile time and again by
//     Update where hosts come or go, to the next less specific
//     entry that serves every host it serves (an exact host to its longest
//     matching wildcard, a wildcard to its longest shorter wildcard, the
//     last one to the catch-all). Match finds the most specific entry once
//     and then follows the links.
//   - Paths. Each host entry owns a radix trie over path bytes. A node holds
//     the Exact rules whose value is the node's key, the PathPrefix rules
//     whose (slash-trimmed) value is the node's key, and the regex rules whose
//     literal prefix (regexp.LiteralPrefix) is the node's key: a regex can
//     only match paths that start with its literal prefix. Each host
//     entry's rules are sorted once by the criteria above and filed in that
//     order, so each node's candidate lists are sorted, and each node knows
//     its nearest ancestor holding prefix rules and regex rules.
//   - Layout. The tries are built with pointers (build.go) and then laid out
//     into flat arrays (layout.go) for Match (table.go): each host's nodes side
//     by side in breadth-first order, one 64-byte node per cache line with edge
//     labels of up to 24 bytes and the first bytes of up to 8 children inline,
//     and candidates by value in rank order. A host entry names the root's only
//     child, where nearly every walk starts. With 10,000 routes the table no
//     longer fits in the CPU's nearer caches, and what Match costs is mostly
//     how many cache lines it touches in a row: the host slot (after the list
//     of slot pages, small enough to stay cached), about two nodes, one
//     candidate.
//
// Match walks the path trie once, down to the deepest node whose key starts
// the path, and then tries, in precedence order: that node's Exact rules if
// its key is the whole path; the regex rules of it and its ancestors (the
// best match among them, since they tie on path kind); the prefix rules of it
// and its ancestors, deepest first, where the key ends at an element
// boundary. Within a list the first rule whose method, headers and query
// match wins. If nothing on a host entry matches, the next entry in its chain
// is searched.
//
// Match cost is the host's label count plus the path length plus the rules
// actually competing for the request; it does not depend on the size of the
// table. It does not allocate, except that a regex compared with a repeated
// header or an escaped query value borrows a pooled buffer.
//
// # Updating a table
//
// A proxy whose config changes by one route need not build its tables
// again: Update makes a new Table from an old one and a change, and redoes
// only the host entries the change touches.
//
// The contract. t.Update(remove, add) holds t's rules except every rule
// whose Key equals one in remove, followed by the rules of add in add's
// order. That defines a table's rule list: Build's input for a built
// table, and for an updated one its source's list with the removed rules
// taken out (the others keep their order) and the added ones appended. For
// every request, Match on the result answers as a Table built by Build
// from that list would: the same winner, by the same precedence, input
// order (the position in that list) deciding full ties. Where that Build
// would pass a table limit, Update fails with the same error: it reports
// every list over the limit, sorted by hostname, path kind and path,
// whichever way the table was made. Further:
//
//   - Keys compare field by field, Created with time.Time.Equal. A Key held
//     by several rules removes them all; a Key in remove that no rule of t
//     has fails the Update with ErrUnknownKey (the caller's idea of the
//     table is wrong, and it should Build it anew). Replacing a rule is
//     removing its Key and adding its new version.
//   - Update never changes t. Requests may go on matching against t while
//     and after it runs, and t may be updated again, in another way: each
//     result is as if it were the only one.
//   - An Update with nothing to remove or add returns t itself; a nil rule
//     in add is an error, as in Build.
//
// How. Match only ever compares the candidates of one host entry (a node's
// lists, the regex rules of a node and its ancestors), so a candidate's
// rank is its position among its own host entry's rules, and an entry is
// ranked without looking at the others. Besides what Match reads, a Table
// keeps what it was built from (source.go): each host entry's rules in
// precedence order, and for each route ("{namespace}/{name}") the hostnames
// its rules are filed under. Update finds the hosts of a removed Key
// through its route and removes the rules with the whole Key from them,
// merges the added rules into their hosts' lists by precedence, and builds
// a new trie for each host entry whose rules changed. A host that gains its
// first rule gets a new entry; one that loses its last is removed from the
// lookup tables. When an entry comes or goes, the fallback links it
// changes are made again: every link when the catch-all came or went, else
// those of the hosts under a wildcard that came or went. Every other host
// entry keeps its nodes where they were.
//
// Sharing. An Update copies little of the old table:
//
//   - The new tries are laid out after the old table's nodes,
//     candidates and long labels. The first Update of a table appends
//     them in place when its arrays have room past their ends, which the
//     old table never reads; a later Update of the same table copies the
//     arrays first. Build and compaction size the arrays exactly, so the
//     first Update after them copies, and append's growth leaves room
//     for the next ones.
//   - Host slots and host entries are kept in pages of 256 (paged.go): an
//     Update copies the list of pages and the pages it writes to.
//   - The record of rules is kept in maps split into shards of about 64
//     entries (shardmap.go): an Update copies the shards it writes to.
//
// Space. Tries an Update replaces stay in the arrays, unused. When they
// would outnumber the live ones, Update moves the live host entries
// together (layout.go: each entry's nodes and candidates are one run each,
// copied and their indices shifted, not laid out again) and makes the host
// lookup tables anew. The arrays so never hold more than twice what the
// live entries need, and the move comes once per as many Updates as it
// takes to replace as many nodes as are live: at 5,000 proxy-shaped routes
// (10,000 nodes, two replaced by a one-route Update), a move of about 1 ms
// every 5,000 Updates.
//
// Cost. A one-route Update costs building the trie of each host entry it
// changes, plus copies of what it writes to: the page lists (24 bytes per
// 256 slots or entries), a page of slots (16 KiB) and of entries (3 KiB),
// and map shards: about 34 KB in all at 5,000 routes, where it takes
// about 25 µs and Build about 7 ms (BENCHMARKS.md).
package matcher
