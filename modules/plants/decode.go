package plants

import (
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/plants/plantjson"
)

// The body decoder lives in plantjson, a leaf package, so that the CLI's
// import checks its file with the decoder the API runs.

// badRequestError is a request that is not valid: a body that is not a
// NewPlant, a bad parameter or header. Its message is written to the client
// as is, so it names the field and the problem.
type badRequestError = plantjson.BadRequestError

func badRequest(msg string) error { return &badRequestError{Message: msg} }

// maxDepth is how deeply a value in a NewPlant may nest.
const maxDepth = plantjson.MaxDepth

// decodeNewPlant parses a NewPlant request body (plantjson.DecodeNewPlant).
func decodeNewPlant(body []byte) (plant.Plant, error) { return plantjson.DecodeNewPlant(body) }

// decodeReplacement parses a PUT /plants/{id} body
// (plantjson.DecodeReplacement).
func decodeReplacement(body []byte, id int64) (plant.Plant, error) {
	return plantjson.DecodeReplacement(body, id)
}
