package endpointstore

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
)

// Memory is a Store in memory, for the memory store and tests. It keeps
// each endpoint as its JSON, as the durable stores do, so that a caller
// that changes what it got back changes nothing stored.
type Memory struct {
	mu        sync.Mutex
	endpoints map[string][]byte
	version   int64
}

// NewMemory returns an empty Store in memory.
func NewMemory() *Memory { return &Memory{endpoints: make(map[string][]byte)} }

// ListEndpoints implements Store.
func (m *Memory) ListEndpoints(_ context.Context, after string, limit int) ([]Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.endpoints))
	for id := range m.endpoints {
		if id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > limit {
		ids = ids[:max(limit, 0)]
	}
	out := make([]Endpoint, 0, len(ids))
	for _, id := range ids {
		ep, err := Unmarshal(m.endpoints[id])
		if err != nil {
			return nil, err
		}
		out = append(out, ep)
	}
	return out, nil
}

// GetEndpoint implements Store.
func (m *Memory) GetEndpoint(_ context.Context, id string) (Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	doc, ok := m.endpoints[id]
	if !ok {
		return Endpoint{}, ErrNotFound
	}
	return Unmarshal(doc)
}

// PutEndpoint implements Store.
func (m *Memory) PutEndpoint(_ context.Context, ep Endpoint, expect int64) (Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.revision(ep.ID) != expect {
		return Endpoint{}, ErrRevision
	}
	ep.Revision = expect + 1
	doc, err := Marshal(ep)
	if err != nil {
		return Endpoint{}, err
	}
	m.endpoints[ep.ID] = doc
	m.version++
	return Unmarshal(doc)
}

// DeleteEndpoint implements Store.
func (m *Memory) DeleteEndpoint(_ context.Context, id string, expect int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rev := m.revision(id)
	switch {
	case rev == 0:
		return ErrNotFound
	case expect != 0 && rev != expect:
		return ErrRevision
	}
	delete(m.endpoints, id)
	m.version++
	return nil
}

// EndpointsVersion implements Store.
func (m *Memory) EndpointsVersion(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version, nil
}

// revision is the stored revision of id, 0 when none is stored; under mu.
func (m *Memory) revision(id string) int64 {
	doc, ok := m.endpoints[id]
	if !ok {
		return 0
	}
	ep, err := Unmarshal(doc)
	if err != nil {
		return -1 // never a revision a caller expects
	}
	return ep.Revision
}

// Marshal is how every store keeps an endpoint: its JSON.
func Marshal(ep Endpoint) ([]byte, error) { return json.Marshal(ep) }

// Unmarshal reads what Marshal wrote.
func Unmarshal(doc []byte) (Endpoint, error) {
	var ep Endpoint
	err := json.Unmarshal(doc, &ep)
	return ep, err
}
