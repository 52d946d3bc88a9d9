// Package compiled turns the route rules of a proxy config
// (package proxycfg) into programs a request runs without deciding
// anything again: a rule's header modifiers folded into one plan per
// direction, a redirect's or rewrite's path edit prepared for the prefix
// its match carries, CORS lists joined into the header values they answer
// with, a retry policy's status codes as a bitmap, a session policy's
// cookie or header name in canonical form.
//
// Compiling is also checking: CompileRule refuses whatever the proxy could
// not serve as written, naming the filter or backend at fault, and
// ValidateRule runs the same checks alone, so the controller can drop one
// bad rule and report it on its route instead of having the proxy refuse
// the whole config. Its error is a RuleError: the route, the rule, and
// each problem with the match and field it is in, so the controller says
// it without taking a message apart.
//
// The filter types the proxy runs are one table, filterKinds (rule.go):
// a row per type says which proxycfg.Filter field carries it, whether a
// backend may carry it, and how it compiles. A test holds the table to
// proxycfg.Filter's fields and to the Gateway API's filter types, each of
// which is a row or is named as not served, with why.
//
// A compiled rule holds no runtime state. It names its backends' clusters
// by ID (the proxy's numbers for them) and is numbered itself (Rule.ID),
// so the proxy keeps connections, endpoints and metrics in slices beside
// it; the same rule value can therefore be shared by every listener that
// serves it. The package depends on the standard library, matcher and
// the HTTP grammar (package httpsyntax) only: no sockets, no metrics.
//
// Where things are:
//
//   - rule.go: Rule, Backend, Target; CompileRule, ValidateRule; a rule's
//     matches as matcher rules (MatcherRule).
//   - headers.go: header modifier plans (RequestHeaderModifier,
//     ResponseHeaderModifier).
//   - redirect.go, rewrite.go: RequestRedirect and URLRewrite, with the
//     path edits they share.
//   - cors.go: the CORS filter: origin patterns and the answers to
//     preflights and actual requests.
//   - mirror.go, retry.go, session.go: RequestMirror sampling, the retry
//     policy and backoff, session persistence (the token's transport;
//     the token itself is signed by the proxy).
package compiled
