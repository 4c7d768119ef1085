package plants

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// appendPlant appends the Plant shape of the create answer: name, and tag
// only when one was given. The contract's Plant has no id (spec rule 2).
func appendPlant(b []byte, p plant.Plant) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, p.Name)
	if p.Tag != nil {
		b = append(b, `,"tag":`...)
		b = appendString(b, *p.Tag)
	}
	return append(b, '}')
}

// appendStoredPlant appends {id, name, tag?}, the shape of a plant read back.
func appendStoredPlant(b []byte, p plant.Plant) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, p.ID, 10)
	b = append(b, `,"name":`...)
	b = appendString(b, p.Name)
	if p.Tag != nil {
		b = append(b, `,"tag":`...)
		b = appendString(b, *p.Tag)
	}
	return append(b, '}')
}

// appendString quotes s as a JSON string. Stored names are valid UTF-8
// (the decoder refuses anything else), so AppendQuote cannot fail here.
func appendString(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s)
	return b
}
