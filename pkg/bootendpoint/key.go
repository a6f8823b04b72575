package bootendpoint

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// KeySecretName is the Secret, in the addon's namespace, that holds
	// the endpoint's HMAC key.
	KeySecretName = "harvester-equinix-addon-boot-key" //nolint:gosec // G101: a Secret's name, not a credential
	// KeySecretKey is the key's entry in the Secret's data.
	KeySecretKey = "key"
	// KeySize is the key's length in bytes: SHA-256's block of entropy.
	KeySize = 32
)

// SecretClient is the part of a Secret client Key uses; wrangler's
// generated SecretClient (and SecretController) has it.
type SecretClient interface {
	Get(namespace, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Create(*corev1.Secret) (*corev1.Secret, error)
}

// Key returns the endpoint's HMAC key, creating its Secret with KeySize
// random bytes the first time. Two replicas starting at once both try to
// create it; the loser reads the winner's, so they agree on one key. The
// key never leaves the Secret and this process; it is never logged.
func Key(ctx context.Context, secrets SecretClient, namespace string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("boot endpoint key: %w", err)
	}
	s, err := secrets.Get(namespace, KeySecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s, err = createKey(secrets, namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("boot endpoint key (Secret %s/%s): %w", namespace, KeySecretName, err)
	}
	key := s.Data[KeySecretKey]
	if len(key) < KeySize {
		return nil, fmt.Errorf("boot endpoint key: Secret %s/%s has no %q of at least %d bytes; delete the Secret for a new key", namespace, KeySecretName, KeySecretKey, KeySize)
	}
	return key, nil
}

func createKey(secrets SecretClient, namespace string) (*corev1.Secret, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("drawing a key: %w", err)
	}
	s, err := secrets.Create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: KeySecretName, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KeySecretKey: key},
	})
	if apierrors.IsAlreadyExists(err) {
		return secrets.Get(namespace, KeySecretName, metav1.GetOptions{})
	}
	return s, err
}

// Nonce is the claim's nonce: HMAC-SHA256 of its ID under key, in
// base64url (a path segment as it is). Only the key's holder can make
// one, and a new claim (a new Instance UID) has a new one.
func Nonce(key []byte, claimID string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("harvester-equinix-addon boot claim\x00" + claimID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// nonceMatches compares in constant time, so the time an answer takes
// tells nothing of how much of a guessed nonce was right.
func nonceMatches(key []byte, claimID, got string) bool {
	return claimID != "" && hmac.Equal([]byte(Nonce(key, claimID)), []byte(got))
}
