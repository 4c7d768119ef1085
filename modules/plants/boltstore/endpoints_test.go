package boltstore_test

import (
	"testing"

	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/endpointstore/endpointstoretest"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
)

// The endpoints keep endpointstore's semantics, and survive a reopen of
// the file.
func TestEndpoints(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	t.Cleanup(func() { _ = s.Close() })
	endpointstoretest.Run(t, s.Endpoints(), func(t *testing.T) endpointstore.Store {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t, dir)
		return s.Endpoints()
	})
	checked(t, s)
}

var _ endpointstore.Provider = (*boltstore.Store)(nil)
