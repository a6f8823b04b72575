package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the throwaway key material of one test cluster.
type pki struct {
	caCert, caKey        string
	servingCert, servKey string
	adminCert, adminKey  string
	saPublic, saPrivate  string
	caPEM, adminCertPEM  []byte
	adminKeyPEM          []byte
}

func writePEM(path, typ string, der []byte) ([]byte, error) {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	return b, os.WriteFile(path, b, 0o600)
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
}

// generatePKI writes a CA, an apiserver serving cert for loopback, an admin client
// cert in system:masters and a service-account key pair into dir.
func generatePKI(dir string) (*pki, error) {
	p := &pki{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servKey: filepath.Join(dir, "apiserver.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		saPublic: filepath.Join(dir, "sa.pub"), saPrivate: filepath.Join(dir, "sa.key"),
	}
	now := time.Now().Add(-time.Hour)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "hea-test-ca"},
		NotBefore: now, NotAfter: now.Add(24 * 365 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if p.caPEM, err = writePEM(p.caCert, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	caParsed, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if err := writeECKey(p.caKey, caKey); err != nil {
		return nil, err
	}

	issue := func(certPath, keyPath string, tmpl *x509.Certificate) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		if tmpl.SerialNumber, err = newSerial(); err != nil {
			return nil, nil, err
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caParsed, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		certPEM, err := writePEM(certPath, "CERTIFICATE", der)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		keyPEM, err := writePEM(keyPath, "EC PRIVATE KEY", keyDER)
		return certPEM, keyPEM, err
	}
	if _, _, err := issue(p.servingCert, p.servKey, &x509.Certificate{
		Subject: pkix.Name{CommonName: "kube-apiserver"}, NotBefore: now, NotAfter: now.Add(24 * 365 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}); err != nil {
		return nil, fmt.Errorf("serving cert: %w", err)
	}
	if p.adminCertPEM, p.adminKeyPEM, err = issue(p.adminCert, p.adminKey, &x509.Certificate{
		Subject:   pkix.Name{CommonName: "hea-admin", Organization: []string{"system:masters"}},
		NotBefore: now, NotAfter: now.Add(24 * 365 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, fmt.Errorf("admin cert: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if _, err := writePEM(p.saPrivate, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if _, err := writePEM(p.saPublic, "PUBLIC KEY", pubDER); err != nil {
		return nil, err
	}
	return p, nil
}

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	_, err = writePEM(path, "EC PRIVATE KEY", der)
	return err
}
