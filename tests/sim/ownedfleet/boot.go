package ownedfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// noncePath hides a nonce in the URLs a result records.
var noncePath = regexp.MustCompile(`/boot/[A-Za-z0-9_-]{20,}/`)

// chainURL is the URL iPXE asks for when the DHCP server's boot file is
// <endpoint>/boot/ipxe?mac=${mac}&uuid=${uuid}: iPXE writes the MAC
// with colons and escapes them in the query, as real iPXE did in the
// project's QEMU test.
func (s *server) chainURL() string {
	mac := strings.ReplaceAll(strings.ToLower(s.spec.MAC), ":", "%3A")
	return strings.TrimSuffix(s.fleet.opts.Endpoint, "/") + "/boot/ipxe?mac=" + mac + "&uuid=" + strings.ToLower(s.spec.UUID)
}

// netboot is one boot into the installer up to the installer's checks:
// the chain URL (PXE's, or the one the boot image at image holds), the
// script, the configuration. ok is false when the server got nothing to
// install, or the install would fail; the result says why.
func (s *server) netboot(ctx context.Context, image string) (Result, joinagent.Install, bool) {
	r := Result{Server: s.spec.Name}
	fail := func(format string, args ...any) (Result, joinagent.Install, bool) {
		r.Reason = scrub(fmt.Sprintf(format, args...), s.fleet.opts.Expect.Token)
		s.fleet.opts.Log.Infof("server %s: %s", s.spec.Name, r.Reason)
		return r, joinagent.Install{}, false
	}
	chain := s.chainURL()
	if image != "" {
		var err error
		if chain, err = s.imageChain(ctx, &r, image); err != nil {
			return fail("%v", err)
		}
	}
	script, status, err := s.get(ctx, &r, chain)
	switch {
	case err != nil:
		return fail("iPXE could not reach the boot endpoint: %v", err)
	case status != http.StatusOK:
		return fail("the boot endpoint answered %d: nothing to boot", status)
	}
	boot, err := joinagent.RunIPXE(script, map[string]string{
		"ifname": "net0", "net0/mac": s.spec.MAC, "mac": s.spec.MAC, "uuid": s.spec.UUID,
	})
	if err != nil {
		return fail("iPXE script failed: %v", err)
	}
	in, err := s.install(ctx, &r, boot)
	if err != nil {
		return fail("%v", err)
	}
	return r, in, true
}

// install plays the installer an iPXE script booted, up to its checks:
// the kernel must be the cluster's version for the server's architecture,
// the configuration is fetched from config_url and checked as a real
// install fails. r gets the install's facts and the requests made.
func (s *server) install(ctx context.Context, r *Result, boot joinagent.Boot) (joinagent.Install, error) {
	if boot.Shell || !joinagent.IsHarvesterInstaller(boot) {
		return joinagent.Install{}, errors.New("the script booted no Harvester installer")
	}
	if err := s.checkKernel(boot); err != nil {
		return joinagent.Install{}, err
	}
	configURL := joinagent.ConfigURL(boot.Args)
	if configURL == "" {
		return joinagent.Install{}, errors.New("the installer has no config_url")
	}
	doc, status, err := s.get(ctx, r, configURL)
	switch {
	case err != nil:
		return joinagent.Install{}, fmt.Errorf("the installer could not fetch its configuration: %w", err)
	case status != http.StatusOK:
		return joinagent.Install{}, fmt.Errorf("the installer's configuration URL answered %d", status)
	}
	in, err := joinagent.CheckInstall(boot.Args, doc, s.fleet.opts.Expect, map[string]string{"eth0": s.spec.MAC})
	if err != nil {
		return joinagent.Install{}, installFailed{err}
	}
	if err := s.checkInstall(in); err != nil {
		return joinagent.Install{}, installFailed{err}
	}
	r.Hostname, r.Device, r.ISOURL = in.Hostname, in.Device, in.ISOURL
	r.Network = Network{Method: in.Method, IP: in.IP, SubnetMask: in.SubnetMask, Gateway: in.Gateway, DNS: in.DNS}
	for _, a := range boot.Args {
		if strings.HasPrefix(a, "ip=") || strings.HasPrefix(a, "nameserver=") || strings.HasPrefix(a, "ifname=") {
			r.LiveNetwork = append(r.LiveNetwork, a)
		}
	}
	return in, nil
}

// installFailed is an install that would fail on the server, said as the
// join agent says it of a Metal device's.
type installFailed struct{ err error }

func (e installFailed) Error() string { return "Harvester install failed: " + e.err.Error() }
func (e installFailed) Unwrap() error { return e.err }

// imageChainLine is the boot image's chain command, as package bootmedia
// writes it: the URL, then the NIC's MAC and the SMBIOS UUID iPXE fills in.
var imageChainLine = regexp.MustCompile(`(?m)^chain (https?://[^\s]+?[?&])mac=\$\{\$\{nic\}/mac\}&uuid=\$\{uuid\} \|\|$`)

// imageChain reads the boot image at image, as the BMC's virtual CD (or
// the firmware's HTTP boot) does, and returns the URL its iPXE script
// chains to, filled in as iPXE fills it. An image that is no ISO, or
// whose script chains nowhere, boots nothing.
func (s *server) imageChain(ctx context.Context, r *Result, image string) (string, error) {
	body, status, err := s.fetch(ctx, r, image, maxImage)
	switch {
	case err != nil:
		return "", fmt.Errorf("the BMC could not read the boot image: %w", err)
	case status != http.StatusOK:
		return "", fmt.Errorf("the boot image's URL answered %d: nothing to boot", status)
	case len(body) < isoMagicAt+len(isoMagic) || body[isoMagicAt:isoMagicAt+len(isoMagic)] != isoMagic:
		return "", errors.New("the boot image is no ISO 9660 image: nothing to boot")
	}
	m := imageChainLine.FindStringSubmatch(body)
	if m == nil {
		return "", errors.New("the boot image's script chains nowhere")
	}
	mac := strings.ReplaceAll(strings.ToLower(s.spec.MAC), ":", "%3A")
	return m[1] + "mac=" + mac + "&uuid=" + strings.ToLower(s.spec.UUID), nil
}

// An ISO 9660 image's primary volume descriptor, at sector 16, starts
// with its type byte and this identifier.
const (
	isoMagic   = "CD001"
	isoMagicAt = 16*2048 + 1
	// maxImage bounds a boot image read (the addon's are ~1.3 MB).
	maxImage = 8 << 20
)

// checkKernel: the installer booted must be the cluster's version for
// the server's architecture, or it would not start (another arch) or
// not join (another version).
func (s *server) checkKernel(boot joinagent.Boot) error {
	arch, err := harvester.NormalizeArch(s.spec.Arch)
	if err != nil {
		return err
	}
	want := "/harvester-" + s.fleet.opts.Version + "-vmlinuz-" + arch
	if !strings.HasSuffix(boot.Kernel, want) {
		return fmt.Errorf("the script boots kernel %s, not Harvester %s for %s", boot.Kernel, s.fleet.opts.Version, arch)
	}
	return nil
}

// checkInstall is what a server of one's own must get beyond any join:
// its management NIC, its disk, its architecture's ISO of the version.
func (s *server) checkInstall(in joinagent.Install) error {
	if !slices.Equal(in.MACs, []string{strings.ToLower(s.spec.MAC)}) {
		return fmt.Errorf("the management interfaces are %v, not this server's NIC %s", in.MACs, s.spec.MAC)
	}
	if s.spec.Disk != "" && in.Device != s.spec.Disk {
		return fmt.Errorf("install.device is %s, not the server's disk %s", in.Device, s.spec.Disk)
	}
	arch, _ := harvester.NormalizeArch(s.spec.Arch)
	if want := "/harvester-" + s.fleet.opts.Version + "-" + arch + ".iso"; !strings.HasSuffix(in.ISOURL, want) {
		return fmt.Errorf("install.iso_url %s is not Harvester %s for %s", in.ISOURL, s.fleet.opts.Version, arch)
	}
	return nil
}

// get fetches rawURL as iPXE or the installer would, and notes the
// request (its nonce hidden) in r.
func (s *server) get(ctx context.Context, r *Result, rawURL string) (string, int, error) {
	return s.fetch(ctx, r, rawURL, 1<<20)
}

// fetch is get of at most limit bytes.
func (s *server) fetch(ctx context.Context, r *Result, rawURL string, limit int64) (string, int, error) {
	shown := noncePath.ReplaceAllString(rawURL, "/boot/<nonce>/")
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		r.Requests = append(r.Requests, shown+" (not a URL)")
		return "", 0, fmt.Errorf("%s is not an http URL", shown)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", shown, err)
	}
	req.Header.Set("User-Agent", "iPXE/1.21.1 (simulated)")
	resp, err := s.fleet.opts.HTTPClient.Do(req)
	if err != nil {
		r.Requests = append(r.Requests, shown+" (no answer)")
		return "", 0, fmt.Errorf("GET %s: no answer", shown)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	r.Requests = append(r.Requests, fmt.Sprintf("%s %d", shown, resp.StatusCode))
	if err != nil {
		return "", 0, fmt.Errorf("GET %s: %w", shown, err)
	}
	return string(body), resp.StatusCode, nil
}

// scrub masks secrets in text bound for logs and results.
func scrub(text string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, "<redacted>")
		}
	}
	return noncePath.ReplaceAllString(text, "/boot/<nonce>/")
}
