package testnet

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestGetWithToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte("auth=" + r.Header.Get("Authorization")))
	}))
	defer srv.Close()

	if code, body := GetWithToken(srv.URL, "s3cret"); code != http.StatusTeapot || body != "auth=Bearer s3cret" {
		t.Errorf("with a token: %d %q", code, body)
	}
	if code, body := GetWithToken(srv.URL, ""); code != http.StatusTeapot || body != "auth=" {
		t.Errorf("without a token: %d %q, want no Authorization header", code, body)
	}

	// Nothing listens on a port just closed: code 0 and the error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if code, body := GetWithToken("http://"+addr+"/", ""); code != 0 || body == "" {
		t.Errorf("nothing listening: %d %q, want 0 and the error", code, body)
	}
}
