// Command bmcsim serves the project's simulated Redfish BMC for `make
// demo-bmc`: a server's BMC that an Inventory can point at, with a plain
// HTTP control port for the demo's hands on it.
//
//	bmcsim --dir DIR --username U --password P
//
// It writes DIR/bmc-host, DIR/bmc-port, DIR/bmc-ca.pem (the CA that signed
// its certificate) and DIR/bmc-control (the control URL), then serves
// until it gets SIGTERM. The control port takes:
//
//	POST /log?severity=Warning&message=...   adds a system event log entry
//	POST /health?part=PSU%202&health=Critical sets a power supply's health
//	GET  /resets                              the reset types received
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

func main() {
	dir := flag.String("dir", ".cache/dev", "where to write the address, the CA and the control URL")
	user := flag.String("username", "admin", "the BMC's user name")
	pass := flag.String("password", "", "the BMC's password")
	flag.Parse()
	if err := run(*dir, *user, *pass); err != nil {
		fmt.Fprintln(os.Stderr, "bmcsim:", err)
		os.Exit(1)
	}
}

func run(dir, user, pass string) error {
	if pass == "" {
		return fmt.Errorf("--password is required")
	}
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: pass})
	srv, err := bmcsim.NewServer(sim, "")
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctl := &http.Server{Handler: control(sim), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ctl.Serve(ln) }()
	defer ctl.Close()
	for name, content := range map[string]string{
		"bmc-host": srv.Host, "bmc-port": strconv.Itoa(srv.Port), "bmc-ca.pem": string(srv.CACertPEM),
		"bmc-control": "http://" + ln.Addr().String(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	fmt.Printf("Redfish BMC at %s, control at http://%s\n", srv.URL, ln.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	return nil
}

func control(sim *bmcsim.BMC) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /log", func(_ http.ResponseWriter, r *http.Request) {
		sim.AddLogEntry(r.URL.Query().Get("severity"), r.URL.Query().Get("message"))
	})
	mux.HandleFunc("POST /health", func(w http.ResponseWriter, r *http.Request) {
		if err := sim.SetHealth(bmcsim.PartPowerSupply, r.URL.Query().Get("part"), r.URL.Query().Get("health")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("GET /resets", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(append([]string{}, sim.Resets()...))
	})
	return mux
}
