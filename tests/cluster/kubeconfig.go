package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func (c *Cluster) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hea"] = &clientcmdapi.Cluster{Server: c.APIServerURL(), CertificateAuthorityData: c.pki.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.pki.adminCertPEM, ClientKeyData: c.pki.adminKeyPEM}
	cfg.Contexts["hea"] = &clientcmdapi.Context{Cluster: "hea", AuthInfo: "admin"}
	cfg.CurrentContext = "hea"
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.Kubeconfig); err != nil {
		return err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return err
	}
	// Tests create many objects quickly; client-side throttling would only slow
	// them down and hide nothing.
	rc.QPS, rc.Burst = 200, 400
	c.RESTConfig = rc
	return nil
}

// ServiceAccountConfig returns a REST config and a kubeconfig file that
// authenticate as ServiceAccount namespace/name with a token from the
// TokenRequest API, as a pod of that ServiceAccount would. The
// ServiceAccount must exist.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, string, error) {
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, "", err
	}
	// Long enough for the longest fault campaign; the apiserver caps nothing.
	expiry := int64((48 * time.Hour).Seconds())
	tok, err := k8s.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hea"] = &clientcmdapi.Cluster{Server: c.APIServerURL(), CertificateAuthorityData: c.pki.caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["hea"] = &clientcmdapi.Context{Cluster: "hea", AuthInfo: name}
	cfg.CurrentContext = "hea"
	path := filepath.Join(c.dir, "kubeconfig-"+namespace+"-"+name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, "", err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, "", err
	}
	rc.QPS, rc.Burst = c.RESTConfig.QPS, c.RESTConfig.Burst
	return rc, path, nil
}
