// Package config turns raw command-line values into a validated Config.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// DefaultMetalAPIURL is the Equinix Metal API base. The SDK appends operation paths
// to it, so it must end in /metal/v1.
const DefaultMetalAPIURL = "https://api.equinix.com/metal/v1"

// Flags holds raw values as the CLI parsed them.
type Flags struct {
	Kubeconfig     string
	Namespace      string
	SecretName     string
	Threads        int
	MetalAPIURL    string
	HTTPAddress    string
	LeaderElect    bool
	LeaderLockName string
	LogLevel       string
	LogFormat      string
	Debug          bool
	MetalTimeout   time.Duration
}

// Config is the validated controller configuration.
type Config struct {
	Kubeconfig     string
	Namespace      string
	SecretName     string
	Threads        int
	MetalAPIURL    string
	HTTPAddress    string
	LeaderElect    bool
	LeaderLockName string
	LogLevel       logrus.Level
	LogFormat      string
	Debug          bool
	MetalTimeout   time.Duration
}

// New validates flags into a Config. Every problem is reported at once so a user
// fixes them in one pass.
func New(f Flags) (*Config, error) {
	var errs []error
	cfg := &Config{
		Kubeconfig:     f.Kubeconfig,
		Namespace:      f.Namespace,
		SecretName:     f.SecretName,
		Threads:        f.Threads,
		MetalAPIURL:    strings.TrimRight(f.MetalAPIURL, "/"),
		HTTPAddress:    f.HTTPAddress,
		LeaderElect:    f.LeaderElect,
		LeaderLockName: f.LeaderLockName,
		LogFormat:      f.LogFormat,
		Debug:          f.Debug,
		MetalTimeout:   f.MetalTimeout,
	}
	if cfg.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if cfg.SecretName == "" {
		errs = append(errs, errors.New("--secret-name must not be empty"))
	}
	if cfg.Threads < 1 || cfg.Threads > 100 {
		errs = append(errs, fmt.Errorf("--threads must be between 1 and 100, got %d", cfg.Threads))
	}
	if err := validateMetalURL(cfg.MetalAPIURL); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := net.SplitHostPort(cfg.HTTPAddress); err != nil {
		errs = append(errs, fmt.Errorf("--http-address %q: %w", cfg.HTTPAddress, err))
	}
	if cfg.LeaderLockName == "" {
		errs = append(errs, errors.New("--leader-lock-name must not be empty"))
	}
	if cfg.MetalTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--metal-timeout must be positive, got %s", cfg.MetalTimeout))
	}
	level, err := logrus.ParseLevel(f.LogLevel)
	if err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	cfg.LogLevel = level
	if cfg.Debug {
		cfg.LogLevel = logrus.DebugLevel
	}
	switch cfg.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("--log-format must be text or json, got %q", cfg.LogFormat))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

func validateMetalURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--metal-api-url %q: %w", raw, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("--metal-api-url %q: scheme must be https (or http for a local simulator)", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("--metal-api-url %q: no host", raw)
	}
	if !strings.HasSuffix(u.Path, "/metal/v1") {
		return fmt.Errorf("--metal-api-url %q: must end in /metal/v1, where the SDK appends operation paths", raw)
	}
	return nil
}
