package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/plantstore/plantstore/client"
)

// record is a plant as the CLI prints it and as export writes it: the
// API's {id, name, tag?}, plus the ETag where one is known (get, update).
type record struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
	ETag string  `json:"etag,omitempty"`
}

func toRecord(p client.Plant) record { return record{ID: p.ID, Name: p.Name, Tag: p.Tag, ETag: p.ETag} }

// newEncoder writes one JSON value per line, without escaping <, > and &
// (the output is for terminals and files, not HTML).
func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// printPlants prints plants as JSON (one object for one plant when single,
// else an array) or as a table for people.
func printPlants(w io.Writer, format string, single bool, plants []client.Plant) error {
	if format == "table" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTAG")
		for _, p := range plants {
			tag := "-"
			if p.Tag != nil {
				tag = strconv.Quote(*p.Tag)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.ID, p.Name, tag)
		}
		return tw.Flush()
	}
	if single && len(plants) == 1 {
		return newEncoder(w).Encode(toRecord(plants[0]))
	}
	records := make([]record, len(plants))
	for i, p := range plants {
		records[i] = toRecord(p)
	}
	return newEncoder(w).Encode(records)
}
