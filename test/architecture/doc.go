// Package architecture holds docs/architecture.md's map of the rooms
// against the code, so that the map cannot drift.
//
// Its test reads the rooms table of docs/architecture.md and the
// packages `go list -json ./...` reports, and fails when
//
//   - a package of the module is not in the table, or a row names no
//     package (packages under test/, bench/ and examples/, and packages
//     of test files alone such as fuzz/, are not in it: see the page);
//   - a package imports one listed above it: imports go downwards only;
//   - a package under internal/ imports another package of the module:
//     internal/ holds leaf utilities;
//   - a package outside test/ imports one under it: test/ is the home of
//     fakes and test helpers, and nothing of the product imports them;
//   - a sentence "`P` needs only the standard library and `A`, `B` ..."
//     on the page is not what `go list -deps` says of P.
package architecture
