package schemaregistry

import (
	"container/list"
	"sync"
	"time"
)

// lru is a mutex-guarded least-recently-used map bounded by an entry count.
// An entry with a non-zero expiry is dropped once it has passed.
type lru struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	items map[string]*list.Element
	now   func() time.Time
}

type lruEntry struct {
	key     string
	val     any
	expires time.Time // zero: never
}

func newLRU(maxEntries int, now func() time.Time) *lru {
	return &lru{max: maxEntries, ll: list.New(), items: make(map[string]*list.Element), now: now}
}

func (c *lru) get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*lruEntry)
	if !e.expires.IsZero() && !c.now().Before(e.expires) {
		c.ll.Remove(el)
		delete(c.items, key)
		return nil, false
	}
	c.ll.MoveToFront(el)
	return e.val, true
}

// add stores val under key; ttl 0 means no expiry.
func (c *lru) add(key string, val any, ttl time.Duration) {
	if c.max <= 0 {
		return
	}
	var exp time.Time
	if ttl > 0 {
		exp = c.now().Add(ttl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*lruEntry)
		e.val, e.expires = val, exp
		c.ll.MoveToFront(el)
		return
	}
	c.items[key] = c.ll.PushFront(&lruEntry{key: key, val: val, expires: exp})
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*lruEntry).key)
	}
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
