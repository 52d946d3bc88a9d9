package kubelet

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Container logs. What a container writes goes to <pod dir>/<container>.log
// a line at a time, each prefixed with the time it was read and its stream,
// as the CRI log format has it:
//
//	2026-11-21T19:05:52.127450312Z stdout hello
//
// and the Kubelet serves them as a kubelet does, on HTTPS at the Node's
// InternalIP and the port in its status.daemonEndpoints, so `kubectl logs`
// and client-go's GetLogs work through the API server (the conformance
// suite reads mirrored requests from the backends' logs). Of PodLogOptions,
// sinceTime, sinceSeconds, tailLines, limitBytes and timestamps are
// honoured; follow returns what there is.

// logFile is one container's log, shared by its stdout and stderr.
type logFile struct {
	mu sync.Mutex
	f  *os.File
}

// lineWriter turns one stream's writes into timestamped lines.
type lineWriter struct {
	log    *logFile
	stream string
	buf    []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if err := w.line(w.buf[:i]); err != nil {
			return len(b), err
		}
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

// Flush writes a last line that ended without a newline.
func (w *lineWriter) Flush() {
	if len(w.buf) > 0 {
		_ = w.line(w.buf)
		w.buf = nil
	}
}

func (w *lineWriter) line(b []byte) error {
	w.log.mu.Lock()
	defer w.log.mu.Unlock()
	_, err := fmt.Fprintf(w.log.f, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), w.stream, b)
	return err
}

// serveLogs starts the HTTPS endpoint the API server reads logs from, on
// the bridge's address, and returns its port.
func (k *Kubelet) serveLogs() (int, error) {
	cert, err := selfSigned(k.net.gateway.String())
	if err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(k.net.gateway.String(), "0"))
	if err != nil {
		return 0, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.containerLogs)
	k.logServer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go k.logServer.ServeTLS(ln, "", "")
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// containerLogs answers GET /containerLogs/{namespace}/{pod}/{container}.
func (k *Kubelet) containerLogs(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	p := k.running[r.PathValue("namespace")+"/"+r.PathValue("pod")]
	k.mu.Unlock()
	if p == nil {
		http.Error(w, "pod not found on this node", http.StatusNotFound)
		return
	}
	name := r.PathValue("container")
	known := false
	for _, c := range p.containers {
		known = known || c.spec.Name == name
	}
	if !known {
		http.Error(w, fmt.Sprintf("container %q is not in pod %s", name, p), http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	var since time.Time
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "sinceTime: "+err.Error(), http.StatusBadRequest)
			return
		}
		since = t
	}
	if s := q.Get("sinceSeconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			http.Error(w, "sinceSeconds must be a positive integer", http.StatusBadRequest)
			return
		}
		since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	tail, limit := -1, -1
	if s := q.Get("tailLines"); s != "" {
		if tail, _ = strconv.Atoi(s); tail < 0 {
			tail = 0
		}
	}
	if s := q.Get("limitBytes"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	timestamps := q.Get("timestamps") == "true"

	f, err := os.Open(p.logPath(name))
	if os.IsNotExist(err) {
		return // started nothing yet
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		ts, rest, _ := strings.Cut(sc.Text(), " ")
		_, text, _ := strings.Cut(rest, " ") // the stream
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil && t.Before(since) {
			continue
		}
		if timestamps {
			text = ts + " " + text
		}
		lines = append(lines, text)
	}
	if tail >= 0 && len(lines) > tail {
		lines = lines[len(lines)-tail:]
	}
	var out []byte
	for _, l := range lines {
		out = append(out, l...)
		out = append(out, '\n')
	}
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(out)
}

// selfSigned makes a certificate for the endpoint; the API server does not
// verify it unless told a CA (--kubelet-certificate-authority), which a
// test environment has no reason to.
func selfSigned(ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tunnelgate-test-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
