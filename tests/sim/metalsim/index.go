package metalsim

import (
	"cmp"
	"slices"
)

// The indexes below keep every call's cost independent of the size of the
// fleet: lookups go by project, tag, VLAN or ID instead of scanning every
// device, and ordered lists are kept ordered instead of sorted per request.

// sequenced is an object with a creation sequence number, the order of the
// API's lists.
type sequenced interface {
	comparable
	sequence() uint64
}

// seqList is a list of objects kept in creation order. Adding and removing
// are binary searches plus a copy of pointers, cheap next to rendering even
// one object.
type seqList[T sequenced] struct {
	items []T
}

func (l *seqList[T]) find(x T) (int, bool) {
	return slices.BinarySearchFunc(l.items, x.sequence(), func(e T, seq uint64) int {
		return cmp.Compare(e.sequence(), seq)
	})
}

// add inserts x at its place; adding an object already there does nothing.
func (l *seqList[T]) add(x T) {
	i, found := l.find(x)
	if !found {
		l.items = slices.Insert(l.items, i, x)
	}
}

func (l *seqList[T]) remove(x T) {
	if i, found := l.find(x); found {
		l.items = slices.Delete(l.items, i, i+1)
	}
}

func (l *seqList[T]) len() int { return len(l.items) }

// all returns the list itself; callers must not keep it across changes.
func (l *seqList[T]) all() []T { return l.items }

// refList is a seqList whose objects are counted in: an object stays while
// at least one reference to it does (a device stays on a VLAN's list while
// any of its ports carries the VLAN).
type refList[T sequenced] struct {
	seqList[T]
	refs map[T]int
}

func (l *refList[T]) ref(x T) {
	if l.refs == nil {
		l.refs = map[T]int{}
	}
	l.refs[x]++
	if l.refs[x] == 1 {
		l.add(x)
	}
}

func (l *refList[T]) unref(x T) {
	if l.refs[x] == 0 {
		return
	}
	l.refs[x]--
	if l.refs[x] == 0 {
		delete(l.refs, x)
		l.remove(x)
	}
}

func (d *device) sequence() uint64 { return d.seq }

// indexDevice adds a new device to its project's lists.
func (p *project) indexDevice(d *device) {
	p.devices.add(d)
	p.indexTags(d, d.obj.Tags)
}

// unindexDevice removes a device from its project's lists.
func (p *project) unindexDevice(d *device) {
	p.devices.remove(d)
	p.unindexTags(d, d.obj.Tags)
}

func (p *project) indexTags(d *device, tags []string) {
	if p.byTag == nil {
		p.byTag = map[string]*seqList[*device]{}
	}
	for _, t := range tags {
		l := p.byTag[t]
		if l == nil {
			l = &seqList[*device]{}
			p.byTag[t] = l
		}
		l.add(d)
	}
}

func (p *project) unindexTags(d *device, tags []string) {
	for _, t := range tags {
		if l := p.byTag[t]; l != nil {
			l.remove(d)
			if l.len() == 0 {
				delete(p.byTag, t)
			}
		}
	}
}

// taggedDevices lists the project's devices carrying tag, in creation order.
func (p *project) taggedDevices(tag string) []*device {
	if l := p.byTag[tag]; l != nil {
		return l.all()
	}
	return nil
}

func (b *ipBlock) sequence() uint64 { return b.seq }

// addBlockLocked stores a new IP block and indexes it in its project.
func (s *Simulator) addBlockLocked(b *ipBlock) {
	s.blocks[b.id] = b
	b.project.blocks.add(b)
	if !b.management {
		b.project.elastic.add(b)
	}
}

func (s *Simulator) removeBlockLocked(b *ipBlock) {
	delete(s.blocks, b.id)
	b.project.blocks.remove(b)
	b.project.elastic.remove(b)
}
