package v1

// LabelSecret marks the Secrets the addon reads or writes, and is the
// selector of its Secret cache: Secrets without it never enter the process.
// Credentials Secrets (Metal token and project, join token) carry
// SecretCredentials; the generated console passwords SecretConsole.
const LabelSecret = "equinix.harvesterhci.io/secret"

// Values of LabelSecret.
const (
	SecretCredentials = "credentials"
	SecretConsole     = "console-password"
)
