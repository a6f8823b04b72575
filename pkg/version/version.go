// Package version holds build information set with -ldflags.
package version

var (
	// Version is the release, e.g. v0.1.0; "dev" for local builds.
	Version = "dev"
	// GitCommit is the commit the binary was built from.
	GitCommit = "HEAD"
)

// FriendlyVersion is what logs and the user agent show.
func FriendlyVersion() string {
	return Version + " (" + GitCommit + ")"
}
