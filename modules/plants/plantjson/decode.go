// Package plantjson decodes a NewPlant (and a PUT's replacement) from JSON,
// exactly as the API does. It is a leaf, so that the CLI's import checks its
// file with the very decoder the server runs, and refuses what the server
// would refuse, without linking the server.
package plantjson

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
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
// silently), and allocates almost nothing. Decoders are pooled with the
// buffer they read from: from a *bytes.Buffer jsontext parses in place,
// while from any other reader it would copy the body into a buffer of its
// own, which the pooled decoder would then keep.
var decoders = sync.Pool{New: func() any { return &pooledDecoder{dec: jsontext.NewDecoder(emptyReader)} }}

type pooledDecoder struct {
	dec *jsontext.Decoder
	in  bytes.Buffer
}

// maxPooledInput keeps a rare large body from pinning its memory in the pool.
const maxPooledInput = 64 << 10

// emptyReader parks pooled decoders so that they keep no request's bytes.
var emptyReader = bytes.NewReader(nil)

// DecodeNewPlant parses a NewPlant request body. Unknown members are ignored,
// as the contract allows; everything else that is not exactly one JSON object
// with an int64 id, a string name and an optional string tag is a
// *BadRequestError.
func DecodeNewPlant(body []byte) (plant.Plant, error) {
	return DecodeNewPlantIn(body, requestBody)
}

// requestBody is what the API's messages call the JSON they refuse.
const requestBody = "request body"

// DecodeNewPlantIn is DecodeNewPlant with subject naming the JSON in the
// messages about it as a whole (the API says "request body"; a file's
// reader names its line): the same checks, the same words otherwise.
func DecodeNewPlantIn(body []byte, subject string) (plant.Plant, error) {
	p, _, err := decodeBody(body, subject, "NewPlant", true)
	return p, err
}

// DecodeReplacement parses a PUT /plants/{id} body: a NewPlant whose id may
// be left out, since the path names the plant; one that is given must be
// the path's, so that a body sent to the wrong URL changes nothing.
func DecodeReplacement(body []byte, id int64) (plant.Plant, error) {
	p, haveID, err := decodeBody(body, requestBody, "plant", false)
	if err != nil {
		return plant.Plant{}, err
	}
	if haveID && p.ID != id {
		return plant.Plant{}, badRequest(`"id" ` + strconv.FormatInt(p.ID, 10) + ` differs from the path's id ` + strconv.FormatInt(id, 10))
	}
	p.ID = id
	return p, nil
}

// decodeBody parses one JSON object with an optional int64 id, a string
// name and an optional string tag, the id required when requireID; subject
// names the JSON and what the object in messages.
func decodeBody(body []byte, subject, what string, requireID bool) (_ plant.Plant, haveID bool, _ error) {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 {
		return plant.Plant{}, false, badRequest(subject + " is empty; send a " + what + " JSON object")
	}
	if body[0] != '{' {
		return plant.Plant{}, false, notAnObject(body, subject)
	}
	if !utf8.Valid(body) {
		return plant.Plant{}, false, badRequest(subject + " is not valid UTF-8")
	}
	pd := decoders.Get().(*pooledDecoder)
	dec := pd.dec
	if len(body) <= maxPooledInput {
		pd.in.Reset()
		pd.in.Write(body) // a few dozen bytes, usually: cheaper than allocating a Buffer
		dec.Reset(&pd.in)
	} else {
		dec.Reset(bytes.NewBuffer(body)) // a large body is parsed where it lies
	}
	defer func() {
		dec.Reset(emptyReader)
		if pd.in.Cap() <= maxPooledInput {
			decoders.Put(pd)
		}
	}()

	p, haveID, err := decodeObject(dec, subject, requireID)
	if err != nil {
		return plant.Plant{}, false, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return plant.Plant{}, false, badRequest(subject + " has data after the JSON object")
	}
	return p, haveID, nil
}

func decodeObject(dec *jsontext.Decoder, subject string, requireID bool) (plant.Plant, bool, error) {
	var p plant.Plant
	var haveID, haveName bool
	if _, err := dec.ReadToken(); err != nil { // the '{' checked above
		return p, haveID, syntaxError(err, subject)
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return p, haveID, syntaxError(err, subject)
		}
		switch name.String() {
		case "id":
			p.ID, err = decodeID(dec, subject)
			haveID = true
		case "name":
			p.Name, err = decodeString(dec, subject, "name")
			haveName = true
		case "tag":
			var tag string
			tag, err = decodeString(dec, subject, "tag")
			p.Tag = &tag
		default:
			err = skipValue(dec, subject)
		}
		if err != nil {
			return p, haveID, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return p, haveID, syntaxError(err, subject)
	}
	switch {
	case requireID && !haveID:
		return p, haveID, badRequest(`"id" is required`)
	case !haveName:
		return p, haveID, badRequest(`"name" is required`)
	}
	return p, haveID, nil
}

// MaxTextLength is the most characters (Unicode code points) a name or a
// tag may have. The body limit alone would let one plant carry a megabyte of
// name, and a page of a thousand such plants is a gigabyte built in memory
// for one GET; with this limit a full page stays within a few megabytes.
const MaxTextLength = 1024

// MaxDepth is how deeply a value in a NewPlant may nest. The contract's
// fields are flat and unknown members are ignored, so only a hostile body
// nests deeply; jsontext alone would follow it down to 10000 levels, which
// for nested objects costs milliseconds and megabytes per request (it
// tracks each object's member names to reject duplicates).
const MaxDepth = 64

// skipValue skips an unknown member's value, refusing one that nests deeper
// than MaxDepth as soon as it does.
func skipValue(dec *jsontext.Decoder, subject string) error {
	if k := dec.PeekKind(); k != '{' && k != '[' {
		if err := dec.SkipValue(); err != nil {
			return syntaxError(err, subject)
		}
		return nil
	}
	member := dec.StackDepth() // the NewPlant object's level, 1
	for {
		if _, err := dec.ReadToken(); err != nil {
			return syntaxError(err, subject)
		}
		switch level := dec.StackDepth(); {
		case level == member:
			return nil
		case level > MaxDepth:
			return badRequest(subject + " nests deeper than " + strconv.Itoa(MaxDepth) + " levels")
		}
	}
}

func decodeID(dec *jsontext.Decoder, subject string) (int64, error) {
	if k := dec.PeekKind(); k == '{' || k == '[' {
		// Refused by its first byte: reading it whole would follow a hostile
		// nesting down to jsontext's own limit.
		return 0, badRequest(`"id" must be an integer, not ` + kindName(k))
	}
	v, err := dec.ReadValue()
	if err != nil {
		return 0, syntaxError(err, subject)
	}
	if v.Kind() != '0' {
		return 0, badRequest(`"id" must be an integer, not ` + kindName(v.Kind()))
	}
	if len(v) > maxInt64Chars {
		// No need to copy a megabyte of digits for ParseInt to say so.
		if bytes.ContainsAny(v, ".eE") {
			return 0, badRequest(`"id" must be an integer, not ` + abbreviate(v))
		}
		return 0, badRequest(`"id" ` + abbreviate(v) + ` is outside the int64 range`)
	}
	id, err := strconv.ParseInt(string(v), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, badRequest(`"id" ` + abbreviate(v) + ` is outside the int64 range`)
	}
	if err != nil {
		return 0, badRequest(`"id" must be an integer, not ` + abbreviate(v))
	}
	return id, nil
}

// maxInt64Chars is the length of the longest int64, -9223372036854775808.
// JSON allows no leading zeros, so a longer integer is out of range.
const maxInt64Chars = 20

// maxEchoed is how much of a bad number an error message quotes: enough to
// recognise it, while a megabyte of digits is not sent back whole.
const maxEchoed = 32

// abbreviate returns the number v for an error message, cut to maxEchoed
// bytes. A JSON number is ASCII, so the cut never splits a character.
func abbreviate(v jsontext.Value) string {
	if len(v) <= maxEchoed {
		return string(v)
	}
	return string(v[:maxEchoed]) + "... (" + strconv.Itoa(len(v)) + " characters)"
}

func decodeString(dec *jsontext.Decoder, subject, field string) (string, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return "", syntaxError(err, subject)
	}
	if tok.Kind() != '"' {
		return "", badRequest(`"` + field + `" must be a string, not ` + kindName(tok.Kind()))
	}
	s := tok.String()
	// PostgreSQL's text cannot hold U+0000, so no store accepts it: the
	// answer is the same 400 whichever store runs, never a 500.
	if strings.IndexByte(s, 0) >= 0 {
		return "", badRequest(`"` + field + `" must not contain the character U+0000`)
	}
	if len(s) > MaxTextLength && utf8.RuneCountInString(s) > MaxTextLength {
		return "", badRequest(`"` + field + `" must be at most ` + strconv.Itoa(MaxTextLength) + ` characters`)
	}
	return s, nil
}

// syntaxError turns a jsontext error into a client message. Duplicate names
// get their own wording because JSON that repeats a key is easy to send by
// mistake and silently picking one value would store the wrong plant.
// A truncated body is checked before the generic syntax error: jsontext
// reports it as a *SyntacticError that wraps io.ErrUnexpectedEOF.
func syntaxError(err error, subject string) error {
	var se *jsontext.SyntacticError
	isSyntax := errors.As(err, &se)
	switch {
	case isSyntax && errors.Is(se.Err, jsontext.ErrDuplicateName):
		return badRequest(subject + " repeats the key " + string(se.JSONPointer) + "; each key may appear once")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return badRequest(subject + " ends before the JSON object is complete")
	case isSyntax:
		return badRequest(subject + " is not valid JSON at byte " + strconv.FormatInt(se.ByteOffset, 10))
	}
	return badRequest(subject + " is not valid JSON")
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
func notAnObject(body []byte, subject string) error {
	v := jsontext.Value(body)
	if !v.IsValid() {
		return badRequest(subject + " is not valid JSON")
	}
	return badRequest(subject + " must be a JSON object, not " + kindName(v.Kind()))
}
