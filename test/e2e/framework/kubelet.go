//go:build e2e

package framework

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// KubeletURL is the base URL of the node's kubelet API.
func (e Env) KubeletURL() string {
	return "https://" + net.JoinHostPort(e.KubeletHost, strconv.Itoa(e.KubeletPort))
}

// ClusterCAPool reads the cluster CA (which signs the kubelet's serving certificate).
func (e Env) ClusterCAPool() (*x509.CertPool, error) {
	pem, err := os.ReadFile(e.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", e.CAFile)
	}
	return pool, nil
}

// KubeletClient is an HTTPS client that verifies the kubelet against the cluster CA. With
// clientCert set it presents the admin kubeconfig's client certificate (system:masters).
func (f *Framework) KubeletClient(clientCert bool) (*http.Client, error) {
	pool, err := f.Env.ClusterCAPool()
	if err != nil {
		return nil, err
	}
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if clientCert {
		c, err := rest.TLSConfigFor(f.Config)
		if err != nil {
			return nil, err
		}
		if c == nil || c.GetClientCertificate == nil {
			return nil, fmt.Errorf("admin kubeconfig has no client certificate")
		}
		tlsCfg.GetClientCertificate = c.GetClientCertificate
	}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true},
	}, nil
}
