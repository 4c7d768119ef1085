package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client"
)

// watchSynopsis is `plants watch`'s usage.
const watchSynopsis = "plantstore plants watch [--after CURSOR | --snapshot] [--wait 30s] [--tag TAG] [--types TYPE,...] [flags]\n\n" +
	"Prints each change of the plants as it commits, one JSON object a line (NDJSON),\n" +
	"until interrupted. Without --after it starts from now; each line's cursor given\n" +
	"to --after resumes after that change (give the same --tag and --types again).\n" +
	"--tag keeps the changes of the plants with exactly that tag: a plant updated out\n" +
	"of it, or deleted, comes as plant.deleted. --types keeps the changes of the types\n" +
	"listed (plant.created, plant.updated, plant.deleted; with --tag, the types as the\n" +
	"tag gives them). --snapshot first prints every current plant (of --tag) as a\n" +
	"plant.created line with \"snapshot\":true, then the changes from there on, none\n" +
	"missed and none twice. A cursor older than the server's retention fails (410):\n" +
	"watch again with --snapshot, or list the plants again and watch from now."

// maxWatchWait is the longest long poll the server accepts.
const maxWatchWait = 60 * time.Second

// change is a change as watch prints it: the feed's own JSON.
type change struct {
	Cursor    string  `json:"cursor"`
	Type      string  `json:"type"`
	ID        int64   `json:"id"`
	Version   int64   `json:"version"`
	Timestamp string  `json:"timestamp"`
	Plant     *record `json:"plant,omitempty"`
	Snapshot  bool    `json:"snapshot,omitempty"`
}

// timestampLayout is the feed's: UTC with exactly three fractional digits.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// watch is `plants watch`: it follows the change feed (filtered as opts
// say) from after (from the newest change when ""), printing each change as a line, until ctx ends
// (an interrupt: a clean stop, exit 0) or the feed fails for good.
func watch(ctx context.Context, api *client.Client, after string, opts client.ChangesOptions, stdout io.Writer) error {
	if after == "" && !opts.Snapshot {
		page, err := api.List(ctx, client.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if page.ChangesCursor == "" {
			return errors.New("the server has no change feed (its listing carries no Plantstore-Changes-Cursor)")
		}
		after = page.ChangesCursor
	}
	enc := newEncoder(stdout)
	for ch, err := range api.Changes(ctx, after, opts) {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		line := change{Cursor: ch.Cursor, Type: ch.Type, ID: ch.ID, Version: ch.Version,
			Timestamp: ch.Time.UTC().Format(timestampLayout), Snapshot: ch.Snapshot}
		if ch.Plant != nil {
			line.Plant = &record{ID: ch.Plant.ID, Name: ch.Plant.Name, Tag: ch.Plant.Tag}
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// checkWatchFlags refuses what watch cannot do, and returns --types as a
// list (nil when not given). tag is --tag, nil when not given.
func checkWatchFlags(f *plantsFlags, tag *string) ([]string, error) {
	if f.wait <= 0 || f.wait > maxWatchWait {
		return nil, fmt.Errorf("--wait %v: want more than 0s and at most %v", f.wait, maxWatchWait)
	}
	if f.after != "" && !isCursor(f.after) {
		return nil, fmt.Errorf("--after %q: not a cursor (the \"cursor\" of a line watch printed)", f.after)
	}
	if f.snapshot && f.after != "" {
		return nil, errors.New("--snapshot and --after: a snapshot starts from the current plants; resume one with --after alone")
	}
	if tag != nil && *tag == "" {
		return nil, errors.New("--tag '': want a tag (the feed follows no empty tag)")
	}
	if f.types == "" {
		return nil, nil
	}
	types := strings.Split(f.types, ",")
	for i, t := range types {
		if !slices.Contains(feedTypes, t) {
			return nil, fmt.Errorf("--types %q: %q is not one of %s", f.types, t, strings.Join(feedTypes, ", "))
		}
		if slices.Contains(types[:i], t) {
			return nil, fmt.Errorf("--types %q: %s given twice", f.types, t)
		}
	}
	if f.snapshot && !slices.Contains(types, client.PlantCreated) {
		return nil, fmt.Errorf("--snapshot with --types %q: a snapshot's plants are plant.created lines; list that type", f.types)
	}
	return types, nil
}

// feedTypes are the change types --types takes.
var feedTypes = []string{client.PlantCreated, client.PlantUpdated, client.PlantDeleted}

// isCursor reports whether s has a cursor's form: 32 characters of
// base64url, or 55 for a snapshot's. What it stands for is the server's to
// say.
func isCursor(s string) bool {
	return (len(s) == 32 || len(s) == 55) && !strings.ContainsFunc(s, func(r rune) bool {
		return !strings.ContainsRune(base64URLAlphabet, r)
	})
}

// base64URLAlphabet is base64url's, the alphabet of cursors and ETags.
const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
