package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/modules/plants/plantjson"
)

// maxLine bounds one NDJSON line: two maximal strings, escaped, and more.
const maxLine = 1 << 20

// lineSubject is what the decoder's messages call a line as a whole
// ("line 3: the line repeats the key /name; ...").
const lineSubject = "the line"

// jsonSpace is the whitespace JSON allows around a value; other spaces
// (U+00A0, U+0085) are the line's content, refused as the server would.
const jsonSpace = " \t\r\n"

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
		b := bytes.Trim(sc.Bytes(), jsonSpace)
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

// parseLine decodes one line with the API's own NewPlant decoder, so that
// the check refuses exactly what the server would (invalid UTF-8, a repeated
// key, an id written as a string, a missing name...) and, like the server,
// ignores members it does not know.
func parseLine(b []byte) (client.Plant, error) {
	p, err := plantjson.DecodeNewPlantIn(b, lineSubject)
	if err != nil {
		return client.Plant{}, err
	}
	return client.Plant{ID: p.ID, Name: p.Name, Tag: p.Tag}, nil
}
