package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client"
)

// plantsVerbs are the verbs of `plantstore plants`, in the usage's order.
var plantsVerbs = []string{"create", "get", "list", "update", "delete", "watch"}

const plantsUsage = "usage: plantstore plants create|get|list|update|delete|watch [flags]"

// plantsSynopses are each verb's usage line and what it does.
var plantsSynopses = map[string]string{
	"create": "plantstore plants create ID --name NAME [--tag TAG] [flags]\n\nCreates a plant; 409 when the id holds a different one.",
	"get":    "plantstore plants get ID [flags]\n\nPrints a plant with its ETag (for --if-match).",
	"list":   "plantstore plants list [--tag TAG] [--limit N] [flags]\n\nPrints every plant (or those with exactly the tag), walking all the pages.",
	"update": "plantstore plants update ID --name NAME [--tag TAG | --no-tag] [--if-match ETAG] [flags]\n\n" +
		"Renames a plant; its tag is kept unless --tag or --no-tag says otherwise.\n" +
		"--tag replaces the tag (--tag '' is the empty tag), --no-tag removes it. Keeping\n" +
		"the tag reads the plant first and replaces only the version read, so that a\n" +
		"change made meanwhile is not overwritten (412 Precondition Failed).",
	"delete": "plantstore plants delete ID [--if-match ETAG] [flags]\n\nDeletes a plant.",
	"watch":  watchSynopsis,
}

// plantsFlags are the values of a plants verb's flags.
type plantsFlags struct {
	common
	name, tag, ifMatch string
	noTag              bool
	limit              int
	after              string        // watch
	wait               time.Duration // watch
}

// newPlantsFlags defines the flags of `plantstore plants verb`; nil for an
// unknown verb.
func newPlantsFlags(verb string, getenv func(string) string) (*flag.FlagSet, *plantsFlags) {
	if !slices.Contains(plantsVerbs, verb) {
		return nil, nil
	}
	fs := flag.NewFlagSet("plants "+verb, flag.ContinueOnError)
	f := &plantsFlags{}
	switch verb {
	case "create":
		fs.StringVar(&f.name, "name", "", "the plant's name (required)")
		fs.StringVar(&f.tag, "tag", "", "the plant's tag (none when not given)")
	case "update":
		fs.StringVar(&f.name, "name", "", "the plant's new name (required)")
		fs.StringVar(&f.tag, "tag", "", "the plant's new tag (the stored one is kept when not given)")
		fs.BoolVar(&f.noTag, "no-tag", false, "remove the plant's tag")
		fs.StringVar(&f.ifMatch, "if-match", "", "update only while the plant has this ETag (from get), or \"*\"")
	case "delete":
		fs.StringVar(&f.ifMatch, "if-match", "", "delete only while the plant has this ETag (from get), or \"*\"")
	case "list":
		fs.IntVar(&f.limit, "limit", 1000, "page size while walking the pages (1 to 1000)")
		fs.StringVar(&f.tag, "tag", "", "only plants with exactly this tag")
	case "watch":
		fs.StringVar(&f.after, "after", "", "print the changes after this cursor (a printed line's); default: from now")
		fs.DurationVar(&f.wait, "wait", client.DefaultChangesWait, "how long each request waits for a change (at most 60s)")
	}
	f.register(fs, getenv)
	return fs, f
}

// plantsHelp is the text of `plantstore plants --help`.
func plantsHelp() string {
	var b strings.Builder
	b.WriteString(plantsUsage + "\n\nThe plants of the API at --url (or $PLANTSTORE_URL), as JSON (-o table for people).\n\n")
	for _, verb := range plantsVerbs {
		synopsis, what, _ := strings.Cut(plantsSynopses[verb], "\n\n")
		what, _, _ = strings.Cut(what, "\n")
		fmt.Fprintf(&b, "  %s\n      %s\n", synopsis, what)
	}
	b.WriteString("\nplantstore plants VERB --help lists a verb's flags.\n")
	return b.String()
}

// runPlants is `plantstore plants <verb>`.
func runPlants(ctx context.Context, args []string, stdio IO) int {
	if len(args) == 0 {
		return usageError(stdio.Stderr, "plants", errors.New(plantsUsage))
	}
	verb, args := args[0], args[1:]
	switch verb {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdio.Stdout, plantsHelp())
		return exitOK
	}
	fs, f := newPlantsFlags(verb, stdio.Getenv)
	if fs == nil {
		return usageError(stdio.Stderr, "plants", fmt.Errorf("unknown verb %q; %s", verb, plantsUsage))
	}
	cmd := "plants " + verb
	positional, code, ok := parseInterleaved(fs, args, stdio, plantsSynopses[verb])
	if !ok {
		return code
	}
	api, err := f.client()
	if err != nil {
		return usageError(stdio.Stderr, cmd, err)
	}
	set := setFlags(fs)
	var tagPtr *string
	if slices.Contains(set, "tag") {
		tagPtr = &f.tag
	}
	if verb == "watch" {
		if len(positional) != 0 {
			return usageError(stdio.Stderr, cmd, errors.New("takes no arguments"))
		}
		if err := checkWatchFlags(f); err != nil {
			return usageError(stdio.Stderr, cmd, err)
		}
		return done(stdio, cmd, watch(ctx, api, f.after, f.wait, stdio.Stdout))
	}
	if verb == "list" {
		if len(positional) != 0 {
			return usageError(stdio.Stderr, cmd, errors.New("takes no arguments"))
		}
		if f.limit < 1 || f.limit > 1000 {
			return usageError(stdio.Stderr, cmd, fmt.Errorf("--limit %d: want 1 to 1000", f.limit))
		}
		plants := []client.Plant{}
		for p, err := range api.All(ctx, client.ListOptions{Limit: f.limit, Tag: tagPtr}) {
			if err != nil {
				return failed(stdio.Stderr, cmd, err)
			}
			plants = append(plants, p)
		}
		return done(stdio, cmd, printPlants(stdio.Stdout, f.output, false, plants))
	}
	if len(positional) != 1 {
		return usageError(stdio.Stderr, cmd, errors.New("wants one plant id"))
	}
	id, err := strconv.ParseInt(positional[0], 10, 64)
	if err != nil {
		return usageError(stdio.Stderr, cmd, fmt.Errorf("id %q is not an int64", positional[0]))
	}
	if (verb == "create" || verb == "update") && !slices.Contains(set, "name") {
		return usageError(stdio.Stderr, cmd, errors.New("--name is required"))
	}
	if f.noTag && tagPtr != nil {
		return usageError(stdio.Stderr, cmd, errors.New("--tag and --no-tag exclude each other"))
	}
	var p client.Plant
	switch verb {
	case "create":
		p = client.Plant{ID: id, Name: f.name, Tag: tagPtr}
		err = api.Create(ctx, p)
	case "get":
		p, err = api.Get(ctx, id)
	case "update":
		if tagPtr == nil && !f.noTag {
			p, err = renameKeepingTag(ctx, api, id, f.name, f.ifMatch)
		} else {
			p, err = api.Update(ctx, client.Plant{ID: id, Name: f.name, Tag: tagPtr}, f.ifMatch)
		}
	case "delete":
		if err = api.Delete(ctx, id, f.ifMatch); err == nil {
			return exitOK
		}
	}
	if err != nil {
		return failed(stdio.Stderr, cmd, err)
	}
	return done(stdio, cmd, printPlants(stdio.Stdout, f.output, true, []client.Plant{p}))
}

// renameKeepingTag is `plants update` without --tag or --no-tag: the API's
// PUT replaces the whole plant, so the stored tag is read and sent back,
// and the PUT is conditional on the version read (If-Match its ETag):
// a tag changed meanwhile is not silently overwritten (412). The user's
// --if-match, when given, must name the version read.
func renameKeepingTag(ctx context.Context, api *client.Client, id int64, name, ifMatch string) (client.Plant, error) {
	stored, err := api.Get(ctx, id)
	if err != nil {
		return client.Plant{}, err
	}
	if ifMatch != "" && ifMatch != "*" && !listsETag(ifMatch, stored.ETag) {
		// The server's own answer to this precondition.
		return client.Plant{}, &client.Error{Status: http.StatusPreconditionFailed,
			Message: "plant " + strconv.FormatInt(id, 10) + " has changed: If-Match does not match its current ETag"}
	}
	return api.Update(ctx, client.Plant{ID: id, Name: name, Tag: stored.Tag}, stored.ETag)
}

// listsETag reports whether the If-Match list (`"a", "b"`) names etag; a
// weak tag (W/"a") never matches, as for If-Match on the server.
func listsETag(list, etag string) bool {
	for tag := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(tag) == etag {
			return true
		}
	}
	return false
}

// done maps a write to stdout's error to the exit code.
func done(stdio IO, cmd string, err error) int {
	if err != nil {
		return failed(stdio.Stderr, cmd, err)
	}
	return exitOK
}

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) []string {
	var names []string
	fs.Visit(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// parseInterleaved parses flags before and after positional arguments
// (`get 5 -o table` as well as `get -o table 5`), which package flag alone
// stops at.
func parseInterleaved(fs *flag.FlagSet, args []string, stdio IO, synopsis string) (positional []string, code int, ok bool) {
	for {
		if code, ok := parse(fs, args, stdio, synopsis); !ok {
			return nil, code, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, 0, true
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
