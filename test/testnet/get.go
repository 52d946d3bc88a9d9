package testnet

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// GetWithToken sends GET url with http.DefaultClient, presenting token
// as "Authorization: Bearer TOKEN" unless token is empty, and returns
// the response's status code and body. When the request fails, it
// returns code 0 and the error's text as the body, so a test can poll a
// server that is not up yet and report what went wrong in one line.
func GetWithToken(url, token string) (code int, body string) {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// RawGET sends "GET target HTTP/1.1" with Host host on a connection of
// its own to addr, the target written as it is (no client cleans it up:
// "//a/./b" and "/a%2Fb" go as they are), and returns the response's
// status code and body. Every step has a deadline; a failure fails t.
func RawGET(t testing.TB, addr, host, target string) (code int, body string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatalf("GET %q: %v", target, err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %q: %v", target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
