package realbackend

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// closed, as a status: the connection closed with no response.
const closed = 0

// spellings is the package doc's table: for each raw request target, the
// status each backend answers with over docRoot. Every 200 must carry
// admin/secret.txt's content. TestDocTable keeps the two the same.
var spellings = []struct {
	target string
	status map[Kind]int
}{
	{"/admin/secret.txt", all(200)},
	{"//admin/secret.txt", all(200)},
	{"/admin//secret.txt", all(200)},
	{"/admin%2Fsecret.txt", all(200)},
	{"/admin%2fsecret.txt", all(200)},
	{"/%2Fadmin/secret.txt", all(200)},
	{"/admin%5Csecret.txt", all(404)},
	{`/admin\secret.txt`, all(404)},
	{"/./admin/secret.txt", all(200)},
	{"/public/../admin/secret.txt", all(200)},
	{"/%2e%2e/admin/secret.txt", map[Kind]int{Lighttpd: 200, Nginx: 400, Python: 200, GoFileServer: 200}},
	{"/admin;x/secret.txt", all(404)},
	{"/admin/secret.txt;x", all(404)},
	{"/%61dmin/secret.txt", all(200)},
	{"/ADMIN/secret.txt", all(404)},
	{"/admin/secret.txt%00", map[Kind]int{Lighttpd: 400, Nginx: 400, Python: closed, GoFileServer: 404}},
	{"/%C0%AFadmin/secret.txt", map[Kind]int{Lighttpd: 400, Nginx: 404, Python: 404, GoFileServer: 404}},
}

func all(status int) map[Kind]int {
	m := map[Kind]int{}
	for _, k := range All() {
		m[k] = status
	}
	return m
}

// docRoot lays out what the package doc's table was observed over.
func docRoot(t *testing.T) string {
	root := t.TempDir()
	for name, content := range map[string]string{
		"admin/secret.txt": "SECRET",
		"public.txt":       "PUBLIC",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestBackends starts each backend, fetches both files with net/http's
// client, then sends each target of the table as written and checks the
// status the table gives, and that only a 200 carries the secret.
func TestBackends(t *testing.T) {
	root := docRoot(t)
	got := map[string]map[Kind]string{}
	for _, kind := range All() {
		t.Run(string(kind), func(t *testing.T) {
			began := time.Now()
			b := Start(t, kind, root)
			t.Logf("%s on %s, answering after %s", b.Name, b.Addr, time.Since(began).Round(time.Millisecond))
			if b.Kind != kind || b.Name == "" || !strings.HasPrefix(b.Addr, "127.0.0.1:") {
				t.Errorf("Backend %+v", b)
			}

			client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
			defer client.CloseIdleConnections()
			for path, want := range map[string]string{"/admin/secret.txt": "SECRET", "/public.txt": "PUBLIC"} {
				resp, err := client.Get("http://" + b.Addr + path)
				if err != nil {
					t.Errorf("GET %s: %v", path, err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(body) != want || err != nil {
					t.Errorf("GET %s: %d %q (%v), want 200 %q", path, resp.StatusCode, body, err, want)
				}
			}

			for _, s := range spellings {
				want := s.status[kind]
				status, body, err := b.Get(s.target)
				cell := strconv.Itoa(status)
				if err != nil {
					cell = "closed"
					if status != 0 {
						cell = fmt.Sprintf("%d, then %v", status, err)
					}
				}
				if got[s.target] == nil {
					got[s.target] = map[Kind]string{}
				}
				got[s.target][kind] = cell
				switch {
				case want == closed && err == nil:
					t.Errorf("GET %s: %d %.40q, want the connection closed with no response", s.target, status, body)
				case want != closed && (err != nil || status != want):
					t.Errorf("GET %s: %s, want %d (update the table in doc.go and spellings if %s changed)", s.target, cell, want, b.Name)
				}
				if served := body == "SECRET"; served != (status == 200) {
					t.Errorf("GET %s: %d %.40q: a 200 must be the secret and nothing else may be", s.target, status, body)
				}
			}
		})
	}

	// The table as observed, in the doc's layout.
	row := func(first string, cells func(Kind) string) string {
		line := fmt.Sprintf("%-29s", first)
		for _, k := range All() {
			line += fmt.Sprintf(" %-9s", cells(k))
		}
		return strings.TrimRight(line, " ")
	}
	table := []string{row("target", func(k Kind) string { return string(k) })}
	for _, s := range spellings {
		table = append(table, row(s.target, func(k Kind) string { return got[s.target][k] }))
	}
	t.Logf("what each backend answered (200: the secret):\n%s", strings.Join(table, "\n"))
}

// TestDocTable keeps the package doc's table and spellings the same.
func TestDocTable(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	header := regexp.MustCompile(`(?m)^//\ttarget\s+(.*)$`).FindSubmatch(src)
	if header == nil {
		t.Fatal("doc.go has no table starting with a line `//\ttarget ...`")
	}
	var kinds []Kind
	for _, f := range strings.Fields(string(header[1])) {
		kinds = append(kinds, Kind(f))
	}
	if !slices.Equal(kinds, All()) {
		t.Errorf("doc.go's table has columns %v; All() is %v", kinds, All())
	}
	var rows []string
	for _, m := range regexp.MustCompile(`(?m)^//\t(/\S*(?:[ \t]+\S+)+)$`).FindAllSubmatch(src, -1) {
		rows = append(rows, strings.Join(strings.Fields(string(m[1])), " "))
	}
	var want []string
	for _, s := range spellings {
		row := []string{s.target}
		for _, k := range All() {
			cell := strconv.Itoa(s.status[k])
			if s.status[k] == closed {
				cell = "closed"
			}
			row = append(row, cell)
		}
		want = append(want, strings.Join(row, " "))
	}
	if !slices.Equal(rows, want) {
		t.Errorf("doc.go's table:\n%s\nspellings:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestVersions keeps the directory Dir looks for the one install.sh
// fills.
func TestVersions(t *testing.T) {
	script, err := os.ReadFile("../tools/backends/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"lighttpd_version": LighttpdVersion, "nginx_version": NginxVersion, "openssh_version": OpenSSHVersion} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(script)
		if m == nil || string(m[1]) != want {
			t.Errorf("install.sh sets %s to %q; the Go constant is %s", name, m, want)
		}
	}
}

// TestMissingSaysMakeBackends: without the unpacked packages, Dir's error
// (which Start fails the test with) says what to run.
func TestMissingSaysMakeBackends(t *testing.T) {
	t.Setenv("TUNNELGATE_BACKENDS_CACHE", t.TempDir())
	_, err := Dir()
	if err == nil || !strings.Contains(err.Error(), "run `make backends`") {
		t.Errorf("Dir() with an empty cache: %v", err)
	}
}

// TestSSHD: the unpacked sshd lets its user in and runs a command for
// the unpacked ssh client.
func TestSSHD(t *testing.T) {
	s := StartSSHD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.Command(ctx, s.Addr, "echo", "hello").CombinedOutput()
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("%s as %s: %q, %v", s.Name, s.User, out, err)
	}
	t.Logf("%s on %s as %s", s.Name, s.Addr, s.User)
}
