package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGenerateConsolePassword(t *testing.T) {
	password, hash, err := GenerateConsolePassword()
	require.NoError(t, err)

	assert.Len(t, password, 26)
	assert.Regexp(t, `^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$`, hash)
	assert.NotContains(t, hash, password)
	require.NoError(t, VerifyPassword(hash, password))
	assert.ErrorIs(t, VerifyPassword(hash, password+"x"), ErrPasswordMismatch)

	other, otherHash, err := GenerateConsolePassword()
	require.NoError(t, err)
	assert.NotEqual(t, password, other)
	assert.NotEqual(t, hash[:19], otherHash[:19], "salts must differ")
}

func TestHashPassword(t *testing.T) {
	tests := []struct {
		name     string
		password string
		wantErr  bool
	}{
		{name: "simple", password: "correct horse battery staple"},
		{name: "symbols", password: `p@$$w0rd!"'`},
		{name: "empty", password: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hash, err := HashPassword(tc.password)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.NoError(t, VerifyPassword(hash, tc.password))
			// The hash must be accepted by RenderJoinConfig.
			in := baseInput(t)
			in.PasswordHash = hash
			_, err = RenderJoinConfig(in)
			assert.NoError(t, err)
		})
	}
}

func TestVerifyPasswordRejectsNonSHA512(t *testing.T) {
	assert.ErrorContains(t, VerifyPassword("hunter2", "hunter2"), "not a SHA-512 crypt hash")
	assert.ErrorContains(t, VerifyPassword("$1$abcdefgh$0123456789012345678901", "x"), "not a SHA-512 crypt hash")
}
