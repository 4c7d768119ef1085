package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// credentials are the files the control plane needs, made for one run in
// its directory: a certificate authority, the API server's serving
// certificate signed by it (for 127.0.0.1 and localhost), the
// service-account signing key, and the static token file.
type credentials struct {
	caCert      []byte // PEM, for clients
	caFile      string
	servingCert string
	servingKey  string
	saKey       string // signs and verifies ServiceAccount tokens
	tokenFile   string
	adminToken  string
}

// adminUser is the static token's user, in system:masters: RBAC lets it do
// anything, as a cluster's admin credentials do.
const adminUser = "kubetest-admin"

func makeCredentials(dir string) (*credentials, error) {
	c := &credentials{
		caFile:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "service-account.key"),
		tokenFile:   filepath.Join(dir, "tokens.csv"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	c.caCert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(c.caFile, c.caCert, 0o600); err != nil {
		return nil, err
	}
	ca, err = x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, serving, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.servingCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingDER}), 0o600); err != nil {
		return nil, err
	}
	if err := writeKey(c.servingKey, servingKey); err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := writeKey(c.saKey, saKey); err != nil {
		return nil, err
	}

	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	c.adminToken = hex.EncodeToString(token)
	// The static token file's columns: token, user, uid, "groups".
	line := c.adminToken + "," + adminUser + "," + adminUser + ",\"system:masters\"\n"
	if err := os.WriteFile(c.tokenFile, []byte(line), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
