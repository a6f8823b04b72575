package metaldriver

import (
	"context"
	"sort"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// pollEvents reads the project's log from its log position (less skew, the
// events the API may list late), keeps what is news per device, moves the
// log position and announces the devices with news.
func (d *Driver) pollEvents(ctx context.Context, ps *projectState, client metal.Client) {
	since, err := d.since(ps)
	if err != nil {
		logrus.Warnf("hardware events of project %s: reading how far its log was read: %v", ps.id, err)
		return
	}
	start := d.opts.Now()
	events, err := client.ListProjectEvents(ctx, metal.ListEventsOptions{Since: since.Add(-skew)})
	if err != nil {
		// The next interval tries again; the API metrics count the failure.
		logrus.Debugf("hardware events of project %s: %v", ps.id, err)
		return
	}
	now := d.opts.Now()
	news := map[string]bool{}
	notice := false
	ps.mu.Lock()
	for _, e := range events {
		if e.DeviceID == "" {
			continue
		}
		ev := fromEvent(e)
		if ps.deviceLocked(e.DeviceID).addLocked(ev, now) {
			news[e.DeviceID] = true
			notice = notice || isTerminationNotice(e.Type)
		}
		if ev.Time.After(ps.newest) {
			ps.newest = ev.Time
		}
	}
	if ps.newest.Before(since) {
		ps.newest = since
	}
	ps.listed, ps.listedFrom = true, start
	ps.askTerminations = ps.askTerminations || notice
	ps.trimLocked(now, d.holdFor())
	ps.advancePositionLocked(now, d.holdFor())
	pos, saved := ps.position, ps.saved
	ps.mu.Unlock()

	if d.opts.Store != nil && pos.After(saved) {
		if err := d.opts.Store.Save(ps.id, pos); err != nil {
			logrus.Warnf("hardware events of project %s: saving how far its log was read: %v", ps.id, err)
		} else {
			ps.mu.Lock()
			ps.saved = pos
			ps.mu.Unlock()
		}
	}
	if notice {
		d.wakeRun()
	}
	d.announce(news)
}

// since is where the next list starts. Once the log was read, from the
// start of that read: what is older was there to be listed then, and is kept
// or forwarded, so an idle project costs one page whatever burst came
// before. The first read starts at the log position, from the store; a project
// never read before, initialLookback ago.
func (d *Driver) since(ps *projectState) (time.Time, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.listed {
		return ps.listedFrom, nil
	}
	if !ps.loaded {
		pos, found := time.Time{}, false
		if d.opts.Store != nil {
			var err error
			if pos, found, err = d.opts.Store.Load(ps.id); err != nil {
				return time.Time{}, err
			}
		}
		if !found {
			pos = d.opts.Now().Add(-initialLookback)
		}
		ps.position, ps.saved, ps.newest, ps.loaded = pos, pos, pos, true
	}
	return ps.position, nil
}

// pollTerminations lists the project's devices that have a termination
// time and announces those whose time is new.
func (d *Driver) pollTerminations(ctx context.Context, ps *projectState, client metal.Client) {
	devs, err := client.ListDevices(ctx, metal.ListDevicesOptions{WithTerminationTime: true, Brief: true})
	if err != nil {
		logrus.Debugf("termination times of project %s: %v", ps.id, err)
		return
	}
	now := map[string]time.Time{}
	news := map[string]bool{}
	ps.mu.Lock()
	for _, dev := range devs {
		now[dev.ID] = dev.TerminationTime
		if old, ok := ps.terminations[dev.ID]; !ok || !old.Equal(dev.TerminationTime) {
			news[dev.ID] = true
		}
	}
	for id := range ps.terminations {
		if _, ok := now[id]; !ok {
			news[id] = true
		}
	}
	ps.terminations = now
	ps.mu.Unlock()
	d.announce(news)
}

func (d *Driver) announce(news map[string]bool) {
	if len(news) == 0 {
		return
	}
	ids := make([]string, 0, len(news))
	for id := range news {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	d.opts.Notify(ids)
}
