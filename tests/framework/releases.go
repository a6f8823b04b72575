package framework

import (
	"io"
	"net/http"
	"regexp"
	"strings"
)

// releaseSite stands in for the Harvester release site, which the tests
// never reach: it answers HEAD for the installer ISO of every Harvester v1
// release (v1.x.y, release candidates included) and 404 for anything else,
// as the real site answers for a version that was never published.
type releaseSite struct{}

var publishedISO = regexp.MustCompile(`^/harvester/(v1\.[0-9]+\.[0-9]+(-rc[0-9]+)?)/harvester-(v1\.[0-9]+\.[0-9]+(-rc[0-9]+)?)-amd64\.iso$`)

func (releaseSite) RoundTrip(req *http.Request) (*http.Response, error) {
	status := http.StatusNotFound
	if m := publishedISO.FindStringSubmatch(req.URL.Path); req.URL.Host == "releases.rancher.com" && m != nil && m[1] == m[3] {
		status = http.StatusOK
	}
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req,
	}, nil
}
