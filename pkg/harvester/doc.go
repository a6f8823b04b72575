// Package harvester holds the pure Harvester knowledge the controllers need: the
// join configuration handed to the installer as device userdata, the iPXE
// scripts that start the installer on Equinix Metal, the release artifacts of a
// Harvester version, the console password, and facts read from cluster objects
// (VIP, join token, version, node roles, health and maintenance mode).
//
// Nothing here talks to the API server or the Metal API: callers pass cached
// objects in and write the results back themselves. The rules mirror the
// installer (harvester/harvester-installer pkg/config and pkg/console) and
// Harvester's node controllers, so a mistake surfaces as an error here instead
// of a server that boots, fails to join and is billed for nothing.
package harvester
