package kubeenv

import (
	"context"
	"net/http"
	"path/filepath"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// startEtcd runs a single-member etcd on two free loopback ports and waits
// until it reports healthy. It returns the client URL.
func (e *Env) startEtcd(ctx context.Context) (string, error) {
	client, err := testproc.FreePort()
	if err != nil {
		return "", err
	}
	peer, err := testproc.FreePort()
	if err != nil {
		return "", err
	}
	clientURL, peerURL := "http://"+loopback(client), "http://"+loopback(peer)
	args := []string{
		"--name=kubeenv",
		"--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kubeenv=" + peerURL,
		// Durability is worthless in a test and fsync is what makes etcd slow.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
	p, err := e.start(binEtcd, args)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: time.Second}
	err = e.waitFor(ctx, p, "etcd to be healthy", func() bool {
		resp, err := hc.Get(clientURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return clientURL, err
}
