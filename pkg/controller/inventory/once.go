package inventory

import "sync"

// onceEach remembers, in memory, which generation of each object was told
// about already, so that a Warning about a spec goes out once per
// generation rather than at every pass (the recorder would count each
// again, a write of the Event every time). After a restart it is told once
// more.
type onceEach struct {
	mu   sync.Mutex
	told map[string]int64
}

func newOnceEach() *onceEach { return &onceEach{told: map[string]int64{}} }

// first reports whether generation of the object key was not told yet, and
// remembers it.
func (o *onceEach) first(key string, generation int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if g, ok := o.told[key]; ok && g == generation {
		return false
	}
	o.told[key] = generation
	return true
}

// forget drops an object that is gone.
func (o *onceEach) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.told, key)
}
