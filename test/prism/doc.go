// Package prism runs Prism, Stoplight's OpenAPI mock server, on Cloudflare's
// own OpenAPI spec, so tests can check that every request tunnelgate sends
// to the Cloudflare API has a shape the API accepts:
//
//	srv := prism.StartT(t)
//	client := cloudflare.NewClient(
//		option.WithAPIToken("token"),
//		option.WithBaseURL(srv.URL()),
//		option.WithMaxRetries(0))
//	... drive the code under test with client ...
//	if r := srv.Rejected(); len(r) > 0 { t.Errorf("refused: %v", r) }
//
// `make prism` (test/prism/install.sh) installs Prism with npm and extracts
// the spec embedded in the cloudflare-go module into
// $TUNNELGATE_PRISM_CACHE (default ~/.cache/tunnelgate/prism); without
// them Start fails, saying so. Start derives the document Prism serves from
// that spec: with the corrections listed in spec.go (where the spec refuses
// what the real API documents and accepts), and trimmed to DefaultPaths and
// the components they use, which starts in about 2 s instead of 30.
//
// Prism answers with the spec's canned examples and keeps no state: it
// checks request shapes (body, query, path parameters, credentials), not
// behaviour. Every request goes through a recording proxy, so whatever
// client a test uses, Exchanges and Rejected tell what Prism said about
// each one.
package prism
