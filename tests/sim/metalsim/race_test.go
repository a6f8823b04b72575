package metalsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentClients runs 50 SDK clients that each create a device, wait
// for it, delete it and wait for it to vanish, while the clock is advanced
// from every goroutine and observers read the simulator. Run with -race.
func TestConcurrentClients(t *testing.T) {
	const workers = 50
	e := newEnv(t)
	rec := record(e.sim)

	ctx, cancel := context.WithCancel(e.ctx)
	observerDone := make(chan struct{})
	go func() {
		defer close(observerDone)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				e.sim.Tick()
				_ = e.sim.Devices(testProject)
				_ = e.sim.Requests()
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.lifecycle(fmt.Sprintf("node-%02d", i))
		}()
	}
	wg.Wait()
	cancel()
	<-observerDone
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	assert.Empty(t, e.sim.Devices(testProject))
	created, deleted := 0, 0
	for _, r := range e.sim.Requests() {
		switch {
		case r.Operation == OpCreateDevice && r.Status == http.StatusCreated:
			created++
		case r.Operation == OpDeleteDevice && r.Status == http.StatusNoContent:
			deleted++
		}
	}
	assert.Equal(t, workers, created)
	assert.Equal(t, workers, deleted)
	assert.Len(t, rec.of(DeviceDeleted), workers)
}

// lifecycle is one client's create → active → delete → gone cycle.
func (e *env) lifecycle(hostname string) error {
	tm := DefaultTimings()
	client := newClient(e.srv.URL+apiPrefix, testToken)
	in := ipxeInput(hostname)
	d, _, err := client.DevicesApi.CreateDevice(e.ctx, testProject).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	if err != nil {
		return fmt.Errorf("create %s: %w", hostname, err)
	}
	for i := 0; ; i++ {
		got, _, err := client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
		if err != nil {
			return fmt.Errorf("get %s: %w", hostname, err)
		}
		if got.GetState() == metalv1.DEVICESTATE_ACTIVE {
			break
		}
		if i > 100 {
			return fmt.Errorf("%s stuck in %s", hostname, got.GetState())
		}
		e.clock.Advance(tm.Queue)
	}
	list, err := client.DevicesApi.FindProjectDevices(e.ctx, testProject).Tag("pool:" + hostname).PerPage(100).ExecuteWithPagination()
	if err != nil || len(list.Devices) != 1 {
		return fmt.Errorf("list %s: %d devices, %w", hostname, len(list.GetDevices()), err)
	}
	if _, err := client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute(); err != nil {
		return fmt.Errorf("delete %s: %w", hostname, err)
	}
	for i := 0; ; i++ {
		_, resp, err := client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
		var apiErr *metalv1.GenericOpenAPIError
		if errors.As(err, &apiErr) && resp.StatusCode == http.StatusNotFound {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get deleted %s: %w", hostname, err)
		}
		if i > 100 {
			return fmt.Errorf("%s never disappeared", hostname)
		}
		e.clock.Advance(tm.Deprovision / 4)
	}
}
