package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki names the files writePKI wrote.
type pki struct {
	caCert     string // the CA the API server's certificate chains to
	serverCert string
	serverKey  string
	saKey      string // signs and verifies ServiceAccount tokens
	// kubeletCert and kubeletKey are the API server's client certificate
	// to kubelets (--kubelet-client-certificate), signed by the CA.
	kubeletCert string
	kubeletKey  string
}

// writePKI makes a CA, a serving certificate for 127.0.0.1 and localhost
// signed by it, the API server's client certificate to kubelets, and a
// ServiceAccount signing key, all ECDSA P-256 (fast to
// generate) and valid for a day.
func writePKI(dir string) (pki, error) {
	p := pki{
		caCert:      filepath.Join(dir, "ca.crt"),
		serverCert:  filepath.Join(dir, "apiserver.crt"),
		serverKey:   filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		kubeletCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return p, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return p, err
	}
	srvDER, srvKey, err := issue(&x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}, ca, caKey)
	if err != nil {
		return p, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, err
	}
	klDER, klKey, err := issue(&x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"kubeadm:cluster-admins"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, caKey)
	if err != nil {
		return p, err
	}
	for path, block := range map[string]func() (*pem.Block, error){
		p.caCert:      func() (*pem.Block, error) { return &pem.Block{Type: "CERTIFICATE", Bytes: caDER}, nil },
		p.serverCert:  func() (*pem.Block, error) { return &pem.Block{Type: "CERTIFICATE", Bytes: srvDER}, nil },
		p.serverKey:   func() (*pem.Block, error) { return ecKeyBlock(srvKey) },
		p.saKey:       func() (*pem.Block, error) { return ecKeyBlock(saKey) },
		p.kubeletCert: func() (*pem.Block, error) { return &pem.Block{Type: "CERTIFICATE", Bytes: klDER}, nil },
		p.kubeletKey:  func() (*pem.Block, error) { return ecKeyBlock(klKey) },
	} {
		b, err := block()
		if err != nil {
			return p, err
		}
		if err := os.WriteFile(path, pem.EncodeToMemory(b), 0o600); err != nil {
			return p, err
		}
	}
	return p, nil
}

// issue makes a key and tmpl's certificate for it, signed by ca.
func issue(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	return der, key, err
}

func ecKeyBlock(k *ecdsa.PrivateKey) (*pem.Block, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}, nil
}
