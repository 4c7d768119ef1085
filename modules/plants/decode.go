package plants

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// BadRequestError is a body that is not a valid NewPlant. Its message is
// written to the client as is, so it names the field and the problem.
type BadRequestError struct{ Message string }

func (e *BadRequestError) Error() string { return e.Message }

func badRequest(msg string) error { return &BadRequestError{Message: msg} }

// The decoder walks tokens with jsontext instead of unmarshalling into a
// struct: it tells "missing" from "null" from "wrong type" for each field,
// rejects duplicate keys and invalid UTF-8 (encoding/json accepts both
// silently), and allocates almost nothing. Decoders are pooled.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(emptyReader) }}

// emptyReader parks pooled decoders so that they keep no request's bytes.
var emptyReader = bytes.NewReader(nil)

// DecodeNewPlant parses a NewPlant request body. Unknown members are ignored,
// as the contract allows; everything else that is not exactly one JSON object
// with an int64 id, a string name and an optional string tag is a
// *BadRequestError.
func DecodeNewPlant(body []byte) (plant.Plant, error) {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 {
		return plant.Plant{}, badRequest("request body is empty; send a NewPlant JSON object")
	}
	if body[0] != '{' {
		return plant.Plant{}, notAnObject(body)
	}
	if !utf8.Valid(body) {
		return plant.Plant{}, badRequest("request body is not valid UTF-8")
	}
	dec := decoders.Get().(*jsontext.Decoder)
	dec.Reset(bytes.NewReader(body))
	defer func() { dec.Reset(emptyReader); decoders.Put(dec) }()

	p, err := decodeObject(dec)
	if err != nil {
		return plant.Plant{}, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return plant.Plant{}, badRequest("request body has data after the JSON object")
	}
	return p, nil
}

func decodeObject(dec *jsontext.Decoder) (plant.Plant, error) {
	var p plant.Plant
	var haveID, haveName bool
	if _, err := dec.ReadToken(); err != nil { // the '{' checked above
		return p, syntaxError(err)
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return p, syntaxError(err)
		}
		switch name.String() {
		case "id":
			p.ID, err = decodeID(dec)
			haveID = true
		case "name":
			p.Name, err = decodeString(dec, "name")
			haveName = true
		case "tag":
			var tag string
			tag, err = decodeString(dec, "tag")
			p.Tag = &tag
		default:
			err = dec.SkipValue()
			if err != nil {
				err = syntaxError(err)
			}
		}
		if err != nil {
			return p, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return p, syntaxError(err)
	}
	switch {
	case !haveID:
		return p, badRequest(`"id" is required`)
	case !haveName:
		return p, badRequest(`"name" is required`)
	}
	return p, nil
}

func decodeID(dec *jsontext.Decoder) (int64, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return 0, syntaxError(err)
	}
	if v.Kind() != '0' {
		return 0, badRequest(`"id" must be an integer, not ` + kindName(v.Kind()))
	}
	id, err := strconv.ParseInt(string(v), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, badRequest(`"id" ` + string(v) + ` is outside the int64 range`)
	}
	if err != nil {
		return 0, badRequest(`"id" must be an integer, not ` + string(v))
	}
	return id, nil
}

func decodeString(dec *jsontext.Decoder, field string) (string, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return "", syntaxError(err)
	}
	if tok.Kind() != '"' {
		return "", badRequest(`"` + field + `" must be a string, not ` + kindName(tok.Kind()))
	}
	return tok.String(), nil
}

// syntaxError turns a jsontext error into a client message. Duplicate names
// get their own wording because JSON that repeats a key is easy to send by
// mistake and silently picking one value would store the wrong plant.
// A truncated body is checked before the generic syntax error: jsontext
// reports it as a *SyntacticError that wraps io.ErrUnexpectedEOF.
func syntaxError(err error) error {
	var se *jsontext.SyntacticError
	isSyntax := errors.As(err, &se)
	switch {
	case isSyntax && errors.Is(se.Err, jsontext.ErrDuplicateName):
		return badRequest("request body repeats the key " + string(se.JSONPointer) + "; each key may appear once")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return badRequest("request body ends before the JSON object is complete")
	case isSyntax:
		return badRequest("request body is not valid JSON at byte " + strconv.FormatInt(se.ByteOffset, 10))
	}
	return badRequest("request body is not valid JSON")
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "invalid JSON"
}

// notAnObject names what the body is instead of a NewPlant object; a body
// that is not JSON at all ("nope", "tru") is not called null or a boolean.
func notAnObject(body []byte) error {
	v := jsontext.Value(body)
	if !v.IsValid() {
		return badRequest("request body is not valid JSON")
	}
	return badRequest("request body must be a JSON object, not " + kindName(v.Kind()))
}
