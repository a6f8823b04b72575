package common

import (
	"fmt"
	"sync"
)

// lazy is a value built on first use, once; a failed build's error is kept
// as its value is.
type lazy[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (l *lazy[T]) get(build func() (T, error)) (T, error) {
	l.once.Do(func() { l.v, l.err = build() })
	return l.v, l.err
}

func (l *lazy[T]) must(build func() T) T {
	v, _ := l.get(func() (T, error) { return build(), nil })
	return v
}

// sharedValues are lazies under keys that the packages building them
// choose (Shared).
type sharedValues struct {
	mu     sync.Mutex
	values map[any]any
}

func get[T any](s *sharedValues, key any, build func() (T, error)) (T, error) {
	s.mu.Lock()
	if s.values == nil {
		s.values = map[any]any{}
	}
	l, ok := s.values[key].(*lazy[T])
	if !ok {
		if other, taken := s.values[key]; taken {
			s.mu.Unlock()
			var none T
			return none, fmt.Errorf("shared value %T is a %T, not a %T", key, other, l)
		}
		l = &lazy[T]{}
		s.values[key] = l
	}
	// Built outside the lock: a build may ask for other shared values.
	s.mu.Unlock()
	return l.get(build)
}
