package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/plantstore/plantstore/client"
)

// maxTextLength is the server's limit on a name or a tag, in code points;
// checked here so that a file the server would refuse stops before any
// plant is sent.
const maxTextLength = 1024

// maxLine bounds one NDJSON line: two maximal strings, escaped, and more.
const maxLine = 1 << 20

// readNDJSON reads and validates a whole export: every line one object
// {"id": int64, "name": string, "tag": string?}, no id twice. The first
// bad line is an error naming its number, returned before anything is
// sent, so a bad file changes nothing. Blank lines are skipped.
func readNDJSON(r io.Reader) ([]client.Plant, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var plants []client.Plant
	seen := make(map[int64]int)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		p, err := parseLine(b)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if first, dup := seen[p.ID]; dup {
			return nil, fmt.Errorf("line %d: id %d is already on line %d", line, p.ID, first)
		}
		seen[p.ID] = line
		plants = append(plants, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return plants, nil
}

func parseLine(b []byte) (client.Plant, error) {
	var rec struct {
		ID   *json.Number    `json:"id"`
		Name *string         `json:"name"`
		Tag  json.RawMessage `json:"tag"` // "null" when null, so that it is refused
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if b[0] != '{' {
		return client.Plant{}, fmt.Errorf("not a JSON object")
	}
	if err := dec.Decode(&rec); err != nil {
		return client.Plant{}, fmt.Errorf("not a plant: %v", err)
	}
	if dec.More() {
		return client.Plant{}, fmt.Errorf("data after the JSON object")
	}
	if rec.ID == nil {
		return client.Plant{}, fmt.Errorf(`"id" is required`)
	}
	id, err := strconv.ParseInt(rec.ID.String(), 10, 64)
	if err != nil {
		return client.Plant{}, fmt.Errorf(`"id" %s is not an int64`, rec.ID.String())
	}
	if rec.Name == nil {
		return client.Plant{}, fmt.Errorf(`"name" is required (a string)`)
	}
	p := client.Plant{ID: id, Name: *rec.Name}
	if len(rec.Tag) > 0 {
		var tag *string
		if err := json.Unmarshal(rec.Tag, &tag); err != nil || tag == nil {
			return client.Plant{}, fmt.Errorf(`"tag" must be a string`)
		}
		p.Tag = tag
	}
	for field, s := range map[string]*string{"name": &p.Name, "tag": p.Tag} {
		if s == nil {
			continue
		}
		if utf8.RuneCountInString(*s) > maxTextLength {
			return client.Plant{}, fmt.Errorf("%q is over %d characters", field, maxTextLength)
		}
		if bytes.IndexByte([]byte(*s), 0) >= 0 {
			return client.Plant{}, fmt.Errorf("%q contains U+0000", field)
		}
	}
	return p, nil
}
