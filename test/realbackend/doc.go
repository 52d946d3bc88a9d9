// Package realbackend runs the static file servers users put behind a
// proxy, on loopback, so tests can compare what the proxy decides about a
// request target with what a real backend then serves for it:
//
//	root := t.TempDir() // the caller lays out the files
//	os.MkdirAll(filepath.Join(root, "admin"), 0o755)
//	os.WriteFile(filepath.Join(root, "admin", "secret.txt"), []byte("SECRET"), 0o644)
//	os.WriteFile(filepath.Join(root, "public.txt"), []byte("PUBLIC"), 0o644)
//	for _, kind := range realbackend.All() {
//		b := realbackend.Start(t, kind, root) // stopped when the test ends
//		status, body, err := b.Get("/admin%2Fsecret.txt") // the target as written
//		...
//	}
//
// The servers (see Kind): lighttpd and nginx from Debian bookworm, each
// with a minimal configuration that leaves their URL parsing at its
// defaults; Python's http.server (the machine's python3); and net/http's
// FileServer over http.Dir, in the test process. A test typically lays out
// a directory that a route keeps closed (admin/secret.txt) beside files
// that are open (public.txt, public/...), and checks that no spelling of a
// closed path reaches an open rule while a backend would serve it.
//
// `make backends` (test/tools/backends/install.sh) fetches Debian's
// lighttpd, nginx and OpenSSH packages with apt-get download and unpacks them,
// without installing them, into $TUNNELGATE_BACKENDS_CACHE (default
// ~/.cache/tunnelgate/backends); without them Start fails, saying to run
// it. Start never skips.
//
// Beside the web servers, StartSSHD runs OpenSSH's sshd (the same
// packages) on loopback for stream-route tests, as the test's user (as
// root, in a mount namespace of its own that gives it the privilege
// separation user and directory the machine may lack), and SSHD.Command
// its ssh client; it never skips either.
//
// # What each serves
//
// GET with each target below, written as it is on a connection of its own
// (Backend.Get), over a root holding admin/secret.txt ("SECRET") and
// public.txt, gives these statuses; every 200 carries admin/secret.txt's
// content, and "closed" is a connection closed with no response (Python
// raises on the NUL byte). Observed with lighttpd 1.4.69-1, nginx
// 1.22.1-9+deb12u7 and 1.22.1-9+deb12u11, Python 3.11.2 and 3.11.7, Go
// 1.26.8; TestBackends asserts every cell, and TestDocTable that this
// table is the one it checks.
//
//	target                        lighttpd  nginx  python  go-fileserver
//	/admin/secret.txt             200       200    200     200
//	//admin/secret.txt            200       200    200     200
//	/admin//secret.txt            200       200    200     200
//	/admin%2Fsecret.txt           200       200    200     200
//	/admin%2fsecret.txt           200       200    200     200
//	/%2Fadmin/secret.txt          200       200    200     200
//	/admin%5Csecret.txt           404       404    404     404
//	/admin\secret.txt             404       404    404     404
//	/./admin/secret.txt           200       200    200     200
//	/public/../admin/secret.txt   200       200    200     200
//	/%2e%2e/admin/secret.txt      200       400    200     200
//	/admin;x/secret.txt           404       404    404     404
//	/admin/secret.txt;x           404       404    404     404
//	/%61dmin/secret.txt           200       200    200     200
//	/ADMIN/secret.txt             404       404    404     404
//	/admin/secret.txt%00          400       400    closed  404
//	/%C0%AFadmin/secret.txt       400       404    404     404
//
// So every one of them decodes %2F into a path separator, merges slashes,
// and resolves dot segments, encoded ones too (nginx refuses %2e%2e at the
// root with 400, the others serve the file); none treats a backslash or a
// semicolon as special, none folds case, none decodes the overlong UTF-8
// %C0%AF. Debian's shipped lighttpd.conf sets server.http-parseopts with
// url-path-2f-decode enabled, which lighttpd's defaults leave off; with
// Debian's settings lighttpd gave the same column (checked by hand, not by
// a test).
//
// Everything here is test code.
package realbackend
