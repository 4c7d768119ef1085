package jwtauth

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// verified remembers the tokens already verified, by digest, until they
// expire, so that a client sending the same token on every request pays
// for the signature check once: a request then costs a SHA-256 and a map
// read, about what a static token costs. A token is kept until its own exp
// even if its key leaves the JWKS meanwhile (as any verifier that caches
// does); tokens are short-lived for that reason.
type verified struct {
	mu      sync.RWMutex
	entries map[[sha256.Size]byte]verifiedEntry
	max     int
}

type verifiedEntry struct {
	p   *principal.Principal
	exp time.Time
}

// maxVerified bounds the cache: enough for every client of a busy service,
// small enough (about 100 bytes an entry) not to matter.
const maxVerified = 10000

func newVerified(max int) *verified {
	return &verified{entries: make(map[[sha256.Size]byte]verifiedEntry), max: max}
}

func (c *verified) get(d [sha256.Size]byte, now time.Time) *principal.Principal {
	c.mu.RLock()
	e, ok := c.entries[d]
	c.mu.RUnlock()
	if !ok || !now.Before(e.exp) {
		return nil
	}
	return e.p
}

// put keeps p until exp. A full cache first drops what has expired, and
// when everything is still current, everything: the cost is one
// verification per token again, never a wrong answer.
func (c *verified) put(d [sha256.Size]byte, p *principal.Principal, exp, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.exp) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[d] = verifiedEntry{p: p, exp: exp}
}
