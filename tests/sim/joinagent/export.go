package joinagent

import (
	"errors"
	"strings"
)

// What the agent knows of an install, for other simulated servers (the
// owned servers of package ownedfleet) that boot and install the same way
// but are not Metal devices.

// Boot is what an iPXE script did: the kernel and its command line, the
// initrds, or the shell.
type Boot = bootResult

// RunIPXE runs script with the project's iPXE interpreter; vars are what
// iPXE knows after DHCP (ifname, netN/mac, ...).
func RunIPXE(script string, vars map[string]string) (Boot, error) { return runIPXE(script, vars) }

// ConfigURL is the config_url among the installer's kernel arguments, ""
// when there is none: where the installer fetches its configuration.
func ConfigURL(args []string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "harvester.install.config_url="); ok {
			return v
		}
	}
	return ""
}

// IsHarvesterInstaller says the boot started Harvester's installer in its
// automatic mode.
func IsHarvesterInstaller(b Boot) bool { return isHarvesterInstaller(b) }

// CheckInstall merges the installer's kernel arguments with the
// config_url document, as the installer does, and checks the result as a
// real automatic join fails (mode join, server URL, token, hostname,
// management interfaces among nics, by name to MAC, ...). Its error
// never holds the token the document presented.
func CheckInstall(args []string, configDoc string, want Expect, nics map[string]string) (Install, error) {
	cfg := cmdlineConfig(args)
	ud, err := userdataConfig(configDoc)
	if err != nil {
		return Install{}, err
	}
	merge(cfg, ud)
	ic, err := validate(cfg, want, nics)
	if err != nil {
		return Install{}, errors.New(redact(err.Error(), getString(cfg, "token"), want.Token))
	}
	return ic, nil
}
