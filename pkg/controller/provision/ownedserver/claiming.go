package ownedserver

import "sync"

// claiming holds the servers this process's workers are claiming at this
// moment. When a pool grows, its new Instances run on every worker at
// once, each with the same free servers first in line: all but one of
// their claims of the first server would be refused by the apiserver (a
// conflict each, and the next server tried, where the same happens). A
// worker skips a server another one is claiming instead; the apiserver
// still settles claims between processes (an old leader's last writes).
type claiming struct {
	mu    sync.Mutex
	names map[string]bool
}

// take reserves a server for the caller's claim, false when another
// worker is claiming it.
func (c *claiming) take(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names[name] {
		return false
	}
	c.names[name] = true
	return true
}

// done ends the caller's claim of a server, taken or refused: a taken
// one is in the process's own writes from then on.
func (c *claiming) done(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.names, name)
}
