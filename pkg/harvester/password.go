package harvester

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/GehirnInc/crypt/sha512_crypt"
)

// ErrPasswordMismatch is returned by VerifyPassword when password does not
// produce hash.
var ErrPasswordMismatch = errors.New("password does not match its hash")

// GenerateConsolePassword returns a random console password for the rancher
// user and its SHA-512 crypt hash. Only the hash goes into userdata (which
// anyone with the project's API token can read); the password itself belongs in
// a Secret. rand.Text gives 26 base32 characters, about 130 bits, which also
// survives typing over a serial console.
func GenerateConsolePassword() (password, hash string, err error) {
	password = rand.Text()
	hash, err = HashPassword(password)
	if err != nil {
		return "", "", err
	}
	return password, hash, nil
}

// HashPassword returns the SHA-512 crypt hash ($6$, 5000 rounds, 16-character
// random salt from crypto/rand) that the installer writes to /etc/shadow.
func HashPassword(password string) (string, error) {
	if password == "" {
		return "", errors.New("cannot hash an empty password")
	}
	// A nil salt makes the crypter draw a maximum-length salt from crypto/rand.
	hash, err := sha512_crypt.New().Generate([]byte(password), nil)
	if err != nil {
		return "", fmt.Errorf("hashing password: %w", err)
	}
	return hash, nil
}

// VerifyPassword checks password against a SHA-512 crypt hash, e.g. to confirm
// that a stored password Secret still matches the hash in a device's userdata.
func VerifyPassword(hash, password string) error {
	if !passwordHashPattern.MatchString(hash) {
		return errors.New("not a SHA-512 crypt hash")
	}
	if err := sha512_crypt.New().Verify(hash, []byte(password)); err != nil {
		return fmt.Errorf("%w: %w", ErrPasswordMismatch, err)
	}
	return nil
}
