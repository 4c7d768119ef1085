package endpointstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/endpointstore/endpointstoretest"
)

func TestMemory(t *testing.T) {
	endpointstoretest.Run(t, endpointstore.NewMemory(), nil)
}

// A secret never prints: not with %v, %s, %+v nor %#v.
func TestSecretPrintsRedacted(t *testing.T) {
	s := endpointstore.Secret{Value: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	for _, format := range []string{"%v", "%s", "%+v", "%#v"} {
		if got := fmt.Sprintf(format, []endpointstore.Secret{s}); strings.Contains(got, "MfKQ9r8") {
			t.Errorf("%s shows the secret: %s", format, got)
		}
	}
}
