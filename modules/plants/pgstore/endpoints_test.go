package pgstore

import (
	"testing"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/endpointstore/endpointstoretest"
)

// The endpoints keep endpointstore's semantics; a second store on the
// same database (another replica, or a restart) sees what the first wrote.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	endpointstoretest.Run(t, s.Endpoints(), func(t *testing.T) endpointstore.Store {
		return openStore(t, Config{URL: url}).Endpoints()
	})
}

var _ endpointstore.Provider = (*Store)(nil)
