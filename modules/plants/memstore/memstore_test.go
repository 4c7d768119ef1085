package memstore_test

import (
	"testing"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/plants/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) plant.Store { return memstore.New() })
}
